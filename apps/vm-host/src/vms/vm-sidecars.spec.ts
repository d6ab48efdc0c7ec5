import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { FakeVmDriver, fakeHostFacts } from '../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../test/support/vm-services';
import { VmHostConfig } from '../config/vm-host.config';
import type { HostCapacity } from '../host-facts/host-facts.service';
import { VmFiles } from './vm-files';
import { VmsService } from './vms.service';

const HOST: HostCapacity = { ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 };

describe('VmSidecars', () => {
  let bed: VmBed;
  let root: string;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let vms: VmsService;
  let logs: string[];

  beforeEach(async () => {
    bed = await openVmBed('vm-sidecars-');
    ({ root, files, driver, clock, logs } = bed);
    const config = Object.assign(new VmHostConfig(), { nodeId: 'node-a', vcpuOvercommit: 4 });
    ({ vms } = vmServices({ files, driver, clock, hostFacts: fakeHostFacts(HOST), config }));
  });

  afterEach(() => closeVmBed(bed));

  const runFolders = (): Promise<string[]> => bed.runFolders();

  describe('a sidecar that cannot be read', () => {
    const vmId = 'vm-00000000000000cc';
    const live = {
      record: { kind: 'fake', pid: 880 },
      hostPorts: [],
      rssMb: 300,
      summary: 'fake pid 880',
    };

    async function damaged(how: 'not JSON' | 'EISDIR'): Promise<void> {
      await mkdir(files.runDir(vmId));
      const sidecar = join(files.runDir(vmId), 'vm.json');
      if (how === 'EISDIR') await mkdir(sidecar);
      else await writeFile(sidecar, '{"vm_id": "vm-00000000000000cc", "vm_ty');
      await writeFile(files.disk(vmId), 'the guest disk');
      driver.live.set(vmId, live);
    }

    it.each(['not JSON', 'EISDIR'] as const)(
      '(%s) at start-up keeps the VM, its files and its running process, and lists it as Error',
      async (how) => {
        await damaged(how);
        await vms.prepare();
        expect(driver.stopped).toEqual([]);
        expect(driver.live.has(vmId)).toBe(true);
        expect(await runFolders()).toEqual([vmId]);
        expect(await readdir(join(root, 'disks'))).toEqual([`${vmId}.qcow2`]);
        const { vms: reported, committed } = await vms.report();
        expect(reported).toEqual([
          expect.objectContaining({ vm_id: vmId, state: VmState.Error, vm_type: 'unknown' }),
        ]);
        expect(committed).toEqual([{ ramAllocMb: 1, vcpuCount: 1, rssMb: 300 }]);
        expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Error }]);
        expect(logs.filter((line) => line.includes(vmId))).toEqual([
          `error vm ${vmId}: sidecar unreadable (${how}): kept and listed as Error, its process and files left alone until it is deleted`,
        ]);
      },
    );

    it('is stopped by name and its run folder removed only when it is deleted', async () => {
      await damaged('not JSON');
      await vms.prepare();
      await vms.destroy(vmId);
      expect(driver.stopped).toEqual([{ vmId, record: { kind: 'none' } }]);
      expect(await runFolders()).toEqual([]);
      expect(await readdir(join(root, 'disks'))).toEqual([`${vmId}.qcow2`]);
    });
  });
});
