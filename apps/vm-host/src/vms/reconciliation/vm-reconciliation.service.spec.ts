import { createRequest } from '../../../../../test/factories/create-request.factory';
import { mkdir } from 'node:fs/promises';
import { firstValueFrom } from 'rxjs';
import { CreateVmRequest, VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeVmDriver, fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import type { HostCapacity } from '../../host-facts/host-facts.service';
import { StartedVm } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { VmCreateError } from '../vms.errors';
import { VmsService } from '../vms.service';

const HOST: HostCapacity = { ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 };

/** A create of one vCPU unless the fields given say otherwise. */
function request(fields: Partial<CreateVmRequest> = {}): CreateVmRequest {
  return createRequest({ vcpu_count: 1, ...fields });
}

function started(pid: number): StartedVm {
  return {
    record: { kind: 'fake', fast: false, pid },
    hostPorts: [{ host_port: 40_000 + pid, guest_port: 22, protocol: 'tcp' }],
    summary: `fake pid ${pid}`,
  };
}

describe('VmReconciliationService', () => {
  let bed: VmBed;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let vms: VmsService;
  let lifecycle: VmLifeCycles;
  let logs: string[];

  beforeEach(async () => {
    bed = await openVmBed('vm-reconciliation-');
    ({ files, driver, clock, logs } = bed);
    const config = vmHostConfig({ VM_NODE_ID: 'node-a', VM_VCPU_OVERCOMMIT: '4' });
    ({ vms, lifecycle } = await vmServices({
      files,
      driver,
      clock,
      hostFacts: fakeHostFacts(HOST),
      config,
    }));
  });

  afterEach(() => closeVmBed(bed));

  const runFolders = (): Promise<string[]> => bed.runFolders();
  const leftBehind: VmBed['leftBehind'] = (vmId, fields) => bed.leftBehind(vmId, fields);

  describe('reconciling with the processes that run', () => {
    const vmId = 'vm-00000000000000aa';

    it('adopts a live process of a VM whose pid was never written, with its ports', async () => {
      await leftBehind(vmId);
      driver.live.set(vmId, {
        record: { kind: 'fake', pid: 777 },
        hostPorts: [{ host_port: 40_777, guest_port: 22, protocol: 'tcp' }],
        rssMb: 40,
        summary: 'fake pid 777',
      });
      clock.advance(5_000);
      const { vms: reported } = await vms.report();
      expect(reported).toMatchObject([
        {
          vm_id: vmId,
          state: VmState.Running,
          started_at: '2026-08-06T12:00:05.000Z',
          host_ports: [{ host_port: 40_777, guest_port: 22, protocol: 'tcp' }],
        },
      ]);
      expect(await files.readSidecar(vmId)).toMatchObject({
        driver: { kind: 'fake', pid: 777 },
        error: null,
      });
      expect(driver.inspected).toEqual([{ kind: 'fake', pid: 777 }]);
      expect(logs).toContain(`warn vm ${vmId}: adopted its running process (fake pid 777)`);
    });

    it('adopts a live process of a VM marked Error, and leaves an adopted one alone', async () => {
      await leftBehind(vmId, { error: 'agent stopped before the VM was started' });
      driver.live.set(vmId, {
        record: { kind: 'fake', pid: 778 },
        hostPorts: [],
        rssMb: 40,
        summary: 'fake pid 778',
      });
      await vms.report();
      await vms.report();
      expect((await vms.list())[0].state).toBe(VmState.Running);
      expect(logs.filter((line) => line.includes('adopted'))).toHaveLength(1);
    });

    it('finishes a create cut short: its files made again, started, Provisioning meanwhile', async () => {
      await leftBehind(vmId);
      const { vms: reported } = await vms.report();
      expect(reported).toMatchObject([{ vm_id: vmId, state: VmState.Provisioning }]);
      await vms.report();
      expect(driver.filesMade).toEqual([expect.objectContaining({ vmId, ramMb: 1_024 })]);
      const done = firstValueFrom(vms.changes);
      driver.creates[0].settle(started(4243));
      await done;
      expect(driver.creates).toHaveLength(1);
      expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Running }]);
      expect(await files.readSidecar(vmId)).toMatchObject({
        error: null,
        started_at: '2026-08-06T12:00:00.000Z',
        driver: { pid: 4243 },
      });
      expect(logs).toContain(
        `warn vm ${vmId}: its create was cut short (the agent stopped before the VM's first start); making its files and starting it`,
      );
    });

    it('rolls back a create cut short before its spawn was answered, once its deadline has passed', async () => {
      await leftBehind(vmId, { spawn_deadline: new Date(clock.wallNow() - 1).toISOString() });
      await vms.report();
      await lifecycle.provisioned(vmId);
      expect(await vms.list()).toEqual([]);
      expect(await runFolders()).toEqual([]);
      expect(driver.filesMade).toEqual([]);
      expect(driver.creates).toEqual([]);
      expect(logs).toContain(`warn vm ${vmId}: create rolled back, nothing of it left`);
    });

    it('finishes a create cut short before its spawn was answered while its deadline is ahead', async () => {
      await leftBehind(vmId, { spawn_deadline: new Date(clock.wallNow() + 10_000).toISOString() });
      const { vms: reported } = await vms.report();
      expect(reported).toMatchObject([{ vm_id: vmId, state: VmState.Provisioning }]);
      await vms.report();
      expect(driver.filesMade).toEqual([expect.objectContaining({ vmId })]);
      const done = firstValueFrom(vms.changes);
      driver.creates[0].settle(started(4244));
      await done;
      expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Running }]);
    });

    it('rolls a create cut short back when VM_DISK_DIR will not take its files', async () => {
      await leftBehind(vmId);
      driver.filesFailure = Object.assign(new Error('ENOSPC: no space left on device'), {
        code: 'ENOSPC',
      });
      await vms.report();
      await lifecycle.provisioned(vmId);
      expect(await vms.list()).toEqual([]);
      expect(await runFolders()).toEqual([]);
      expect(driver.creates).toEqual([]);
      expect(logs.filter((line) => line.startsWith('error'))).toEqual([
        `error vm ${vmId}: create rolled back: VM_DISK_DIR ${bed.root}: no space left on device (ENOSPC) while making its files again; nothing of the VM was kept`,
      ]);
    });

    it('lists a create cut short Error, saying why, when a tool fails as it is finished', async () => {
      await leftBehind(vmId);
      driver.filesFailure = new VmCreateError('seed ISO', 'genisoimage: not found');
      await vms.report();
      await lifecycle.provisioned(vmId);
      await vms.report();
      expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Error }]);
      expect((await files.readSidecar(vmId))?.error).toBe('seed ISO: genisoimage: not found');
      expect(driver.creates).toEqual([]);
    });

    it('leaves a VM it is provisioning to its provisioning', async () => {
      const { vm } = await vms.spawn(request());
      const { vms: reported } = await vms.report();
      expect(reported).toMatchObject([{ vm_id: vm.vm_id, state: VmState.Provisioning }]);
      expect((await files.readSidecar(vm.vm_id))?.error).toBeNull();
      const done = firstValueFrom(vms.changes);
      driver.creates[0].settle(started(4242));
      await done;
      expect((await vms.list())[0].state).toBe(VmState.Running);
    });

    it('does not wait for an admission on a slow disk, nor mark the VM being admitted Error', async () => {
      let filesMade!: () => void;
      let making!: () => void;
      const madeStarted = new Promise<void>((resolve) => (making = resolve));
      driver.makeFiles = () => {
        making();
        return new Promise<void>((resolve) => (filesMade = resolve));
      };
      const admission = vms.spawn(request({ ram_mb: 2_048 }));
      await madeStarted;
      const { vms: reported, committed } = await vms.report();
      expect(reported).toMatchObject([{ state: VmState.Provisioning, started_at: null }]);
      expect(committed).toEqual([{ ramAllocMb: 2_048, vcpuCount: 1, rssMb: 0 }]);
      const vmId = reported[0].vm_id;
      expect((await files.readSidecar(vmId))?.error).toBeNull();
      filesMade();
      expect((await admission).vm).toMatchObject({ vm_id: vmId, state: VmState.Provisioning });
    });

    it('asks the driver of every VM at once, so a heartbeat waits for the slowest only', async () => {
      const ids = ['vm-00000000000000a1', 'vm-00000000000000a2', 'vm-00000000000000a3'];
      for (const [index, id] of ids.entries()) {
        const record = { kind: 'fake', pid: 900 + index };
        await leftBehind(id, { started_at: '2026-08-06T11:00:01.000Z', driver: record });
        driver.live.set(id, {
          record,
          hostPorts: [],
          rssMb: 10,
          summary: `fake pid ${900 + index}`,
        });
      }
      // Each answer waits until all three were asked: asked one after the other, none answers.
      const waiting: Array<() => void> = [];
      driver.inspect = (_vmId, asked) =>
        new Promise((resolve) => {
          waiting.push(() => resolve(asked.pid === 901 ? 'unknown' : 'running'));
          if (waiting.length === ids.length) waiting.forEach((answer) => answer());
        });
      const { vms: reported } = await vms.report();
      expect(reported.map(({ vm_id, state }) => ({ vm_id, state }))).toEqual([
        { vm_id: ids[0], state: VmState.Running },
        { vm_id: ids[1], state: VmState.Provisioning },
        { vm_id: ids[2], state: VmState.Running },
      ]);
      waiting.length = 0;
      expect((await vms.list()).map(({ state }) => state)).toEqual([
        VmState.Running,
        VmState.Provisioning,
        VmState.Running,
      ]);
    });

    it('at start-up, reconciles and removes a run folder left without a sidecar, stopping any process of it', async () => {
      await leftBehind(vmId);
      const orphan = 'vm-00000000000000bb';
      await mkdir(files.runDir(orphan));
      await vms.prepare();
      expect(await runFolders()).toEqual([vmId]);
      expect(driver.stopped).toEqual([{ vmId: orphan, record: { kind: 'none' } }]);
      expect((await vms.list())[0]).toMatchObject({ vm_id: vmId, state: VmState.Provisioning });
    });
  });
});
