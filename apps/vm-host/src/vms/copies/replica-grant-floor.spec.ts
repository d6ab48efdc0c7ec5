import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CopyGrant } from '@app/daemon';
import { BackupFolder } from './backup-folder';
import { ReplicaGrantFloor, ReplicaGrantStaleError } from './replica-grant-floor';

const VM = 'vm-00000000000000f1';

function grant(issuedAtMs?: number): CopyGrant {
  return {
    vm: VM,
    source: 'node-a',
    peer: 'node-b',
    expiresAtMs: Number.MAX_SAFE_INTEGER,
    ...(issuedAtMs === undefined ? {} : { issuedAtMs }),
  };
}

describe('ReplicaGrantFloor: the replay window of copy grants on a peer', () => {
  let root: string;
  let floor: ReplicaGrantFloor;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'grant-floor-'));
    const folder = new BackupFolder(root);
    await mkdir(folder.vmDir(VM), { mode: 0o700 });
    floor = new ReplicaGrantFloor(folder);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('takes any grant while nothing is recorded (a grant of a controller before issued-at too)', async () => {
    await expect(floor.check(VM, grant(), 'full')).resolves.toBeUndefined();
    await expect(floor.check(VM, grant(5), 'incremental')).resolves.toBeUndefined();
  });

  it('refuses a new full chain with a grant issued before the one that began the chain held', async () => {
    await floor.chainStarted(VM, grant(1_000));
    await expect(floor.check(VM, grant(999), 'full')).rejects.toThrow(
      /issued 1970-01-01T00:00:00\.999Z, before the copy held here began/,
    );
    await expect(floor.check(VM, grant(), 'full')).rejects.toBeInstanceOf(ReplicaGrantStaleError);
    await expect(floor.check(VM, grant(1_000), 'full')).resolves.toBeUndefined();
    // Incrementals add to the chain its own source began (checked by the chain): not refused here.
    await expect(floor.check(VM, grant(999), 'incremental')).resolves.toBeUndefined();
  });

  it("refuses every write with a grant issued before the VM's last restore (an old node come back)", async () => {
    await floor.chainStarted(VM, grant(1_000));
    await floor.restored(VM, 5_000);
    // Never moved back by an older restore.
    await floor.restored(VM, 4_000);
    for (const kind of ['full', 'incremental'] as const) {
      await expect(floor.check(VM, grant(4_999), kind)).rejects.toThrow(
        "before the VM's last restore (1970-01-01T00:00:05.000Z)",
      );
    }
    await expect(floor.check(VM, grant(5_001), 'full')).resolves.toBeUndefined();
    // A chain begun after the restore raises the bar for fulls, not below the restore's.
    await floor.chainStarted(VM, grant(6_000));
    await expect(floor.check(VM, grant(5_500), 'full')).rejects.toBeInstanceOf(
      ReplicaGrantStaleError,
    );
    await expect(floor.check(VM, grant(5_500), 'incremental')).resolves.toBeUndefined();
    expect((await stat(join(root, VM, 'grant-floor.json'))).mode & 0o777).toBe(0o600);
  });

  it('records nothing where no copy is held (its folder is made by its first transfer)', async () => {
    await floor.restored('vm-00000000000000f2', 5_000);
    await expect(stat(join(root, 'vm-00000000000000f2'))).rejects.toThrow(/ENOENT/);
  });
});
