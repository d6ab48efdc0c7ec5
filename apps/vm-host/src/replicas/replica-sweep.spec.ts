import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../test/support/configs';
import { FakeClock } from '../../../../test/support/fake-clock';
import { MANIFEST_FORMAT } from '../vms/copies/backup-folder';
import type { VmCopier } from '../vms/copies/vm-copier';
import { ReplicaSweep } from './replica-sweep';
import { ReplicasService } from './replicas.service';

const VM = 'vm-00000000000000e9';
const KEPT = '20261205T041700Z-3f2a';
const CUT = '20261205T051700Z-9b9b';

describe('ReplicaSweep: what a killed agent left in the copies it holds', () => {
  let diskDir: string;

  beforeEach(async () => {
    diskDir = await mkdtemp(join(tmpdir(), 'replica-sweep-'));
  });

  afterEach(async () => {
    await rm(diskDir, { recursive: true, force: true });
  });

  it('removes partial files and a first copy cut short, keeping every complete chain', async () => {
    const vmDir = join(diskDir, 'replicas', VM);
    await mkdir(join(vmDir, KEPT), { recursive: true });
    await mkdir(join(vmDir, CUT), { recursive: true });
    await writeFile(join(vmDir, KEPT, '0000-full.qcow2'), 'full');
    await writeFile(
      join(vmDir, KEPT, 'manifest.json'),
      JSON.stringify({
        format: MANIFEST_FORMAT,
        vm_id: VM,
        node_id: 'node-a',
        chain_id: KEPT,
        vm: {},
        create_request: {},
        hypervisor: { qemu_img: 'qemu-img', machine: 'q35', disk_virtual_size_bytes: null },
        files: [
          {
            file: '0000-full.qcow2',
            kind: 'full',
            backing: null,
            taken_at: '2026-12-05T04:17:00Z',
            vm_state: 'running',
            size_bytes: 4,
            sha256: '0'.repeat(64),
          },
        ],
        restore: '',
      }),
    );
    // An incremental cut short, and one renamed before its manifest was written.
    await writeFile(join(vmDir, KEPT, '0001.partial.qcow2'), 'half');
    await writeFile(join(vmDir, KEPT, '0001-incremental.qcow2'), 'unlisted');
    // A new full chain cut short: no manifest.
    await writeFile(join(vmDir, CUT, '0000.partial.qcow2'), 'half');
    const replicas = new ReplicasService(
      vmHostConfig({ VM_NODE_ID: 'node-b', VM_DISK_DIR: diskDir }),
      {} as VmCopier,
      new FakeClock(),
    );
    const removed = await new ReplicaSweep(replicas).sweep();
    expect(removed.sort()).toEqual(
      [
        join(vmDir, KEPT, '0001.partial.qcow2'),
        join(vmDir, KEPT, '0001-incremental.qcow2'),
        join(vmDir, CUT),
      ].sort(),
    );
    expect(await readdir(vmDir)).toEqual([KEPT]);
    expect((await readdir(join(vmDir, KEPT))).sort()).toEqual(['0000-full.qcow2', 'manifest.json']);
    expect((await replicas.state(VM)).files).toBe(1);
  });
});
