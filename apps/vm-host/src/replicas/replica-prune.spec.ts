import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../test/support/configs';
import { FakeClock } from '../../../../test/support/fake-clock';
import type { VmCopier } from '../vms/copies/vm-copier';
import { ReplicaPrune, UNWANTED_REPLICA_GRACE_MS } from './replica-prune';
import { ReplicasService } from './replicas.service';

const GONE = 'vm-00000000000000a8';
const KEPT = 'vm-00000000000000a9';

describe('ReplicaPrune: copies of VMs the fleet no longer has', () => {
  let diskDir: string;
  let clock: FakeClock;
  let prune: ReplicaPrune;

  beforeEach(async () => {
    diskDir = await mkdtemp(join(tmpdir(), 'replica-prune-'));
    for (const vmId of [GONE, KEPT]) {
      await mkdir(join(diskDir, 'replicas', vmId, '20261205T041700Z-3f2a'), { recursive: true });
    }
    clock = new FakeClock();
    const replicas = new ReplicasService(
      vmHostConfig({ VM_NODE_ID: 'node-b', VM_DISK_DIR: diskDir }),
      {} as VmCopier,
      clock,
    );
    prune = new ReplicaPrune(replicas, clock);
  });

  afterEach(async () => {
    await rm(diskDir, { recursive: true, force: true });
  });

  const held = () => readdir(join(diskDir, 'replicas'));

  it('removes a copy only once no answer has wanted it for 24 h on end', async () => {
    expect(await prune.judge([GONE, KEPT], [KEPT])).toEqual([]);
    clock.advance(UNWANTED_REPLICA_GRACE_MS - 1);
    expect(await prune.judge([GONE, KEPT], [KEPT])).toEqual([]);
    expect((await held()).sort()).toEqual([GONE, KEPT]);
    clock.advance(1);
    expect(await prune.judge([GONE, KEPT], [KEPT])).toEqual([GONE]);
    expect(await held()).toEqual([KEPT]);
  });

  it('starts over when an answer wants it again (a controller restarted before the source came back)', async () => {
    await prune.judge([GONE], []);
    clock.advance(UNWANTED_REPLICA_GRACE_MS - 1_000);
    await prune.judge([GONE], [GONE]);
    clock.advance(2_000);
    expect(await prune.judge([GONE], [])).toEqual([]);
    clock.advance(UNWANTED_REPLICA_GRACE_MS);
    expect(await prune.judge([GONE], [])).toEqual([GONE]);
  });
});
