import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { removeScratchFolders, scratchFolder } from '../../../../../test/support/scratch-folders';
import { LeaseFile } from './lease-file';

describe('LeaseFile (the lease an agent remembers across restarts)', () => {
  let root: string;
  let lease: LeaseFile;

  beforeEach(() => {
    root = scratchFolder('lease-file-');
    lease = new LeaseFile(root);
  });
  afterAll(() => removeScratchFolders());

  const stored = (value: unknown) =>
    writeFile(join(root, 'fencing.json'), JSON.stringify(value), { mode: 0o600 });

  it("reads back the controller's default copy count with the lease, and a lease without one", async () => {
    await lease.write({ fence_after_s: 45, renewed_at_ms: 1_000, copies_default: 0 });
    expect(await lease.read()).toEqual({
      fence_after_s: 45,
      renewed_at_ms: 1_000,
      copies_default: 0,
    });
    await lease.write({ fence_after_s: 45, renewed_at_ms: 2_000 });
    expect(await lease.read()).toEqual({ fence_after_s: 45, renewed_at_ms: 2_000 });
  });

  it.each([3, -1, 0.5, '1', null])(
    'forgets a default copy count of %p (so a VM without a policy counts as protected), keeping the lease',
    async (copies) => {
      await stored({ fence_after_s: 45, renewed_at_ms: 1_000, copies_default: copies });
      expect(await lease.read()).toEqual({ fence_after_s: 45, renewed_at_ms: 1_000 });
    },
  );
});
