import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  CreateVmRequest,
  DesiredVmState,
  NodeHeartbeat,
  VmState,
  toRfc3339,
} from '@app/fleet-domain';
import { heartbeat } from '../../../../../test/support/heartbeats';
import { VmActionsService } from '../actions/vm-actions.service';
import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeVmDriver, fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import type { HostCapacity } from '../../host-facts/host-facts.service';
import type { FoundVm } from '../vm-driver';
import { VmFiles } from './vm-files';
import { VmDoesNotFitError } from '../vms.errors';
import { VmsService } from '../vms.service';

const HOST: HostCapacity = { ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 };

function request(ramMb: number, vcpuCount: number): CreateVmRequest {
  return { vm_type: 'web', ram_mb: ramMb, vcpu_count: vcpuCount, prefer_kvm: false };
}

describe('VmSidecars', () => {
  let bed: VmBed;
  let root: string;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let vms: VmsService;
  let actions: VmActionsService;
  let logs: string[];

  beforeEach(async () => {
    bed = await openVmBed('vm-sidecars-');
    ({ root, files, driver, clock, logs } = bed);
    const config = vmHostConfig({ VM_NODE_ID: 'node-a', VM_VCPU_OVERCOMMIT: '4' });
    ({ vms, actions } = await vmServices({
      files,
      driver,
      clock,
      hostFacts: fakeHostFacts(HOST),
      config,
    }));
  });

  afterEach(() => closeVmBed(bed));

  const runFolders = (): Promise<string[]> => bed.runFolders();

  describe('a sidecar that cannot be read', () => {
    const vmId = 'vm-00000000000000cc';
    // A running 12 GB VM that has touched 300 MB of its RAM.
    const live = {
      record: { kind: 'fake', pid: 880 },
      hostPorts: [{ host_port: 40_022, guest_port: 22, protocol: 'tcp' as const }],
      rssMb: 300,
      ramMb: 12_288,
      vcpuCount: 4,
      summary: 'fake pid 880',
    };

    async function damaged(how: 'not JSON' | 'EISDIR', process: FoundVm = live): Promise<void> {
      await mkdir(files.runDir(vmId));
      const sidecar = join(files.runDir(vmId), 'vm.json');
      if (how === 'EISDIR') await mkdir(sidecar);
      else await writeFile(sidecar, '{"vm_id": "vm-00000000000000cc", "vm_ty');
      await writeFile(files.disk(vmId), 'the guest disk');
      driver.live.set(vmId, process);
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
        const listed = {
          vm_id: vmId,
          state: VmState.Error,
          vm_type: 'unknown',
          ram_alloc_mb: 12_288,
          vcpu_count: 4,
          host_ports: live.hostPorts,
        };
        expect(reported).toEqual([expect.objectContaining(listed)]);
        // Committed with all its process was started with, not what it has touched.
        expect(committed).toEqual([{ ramAllocMb: 12_288, vcpuCount: 4, rssMb: 300 }]);
        expect(await vms.list()).toMatchObject([listed]);
        expect(logs.filter((line) => line.includes(vmId))).toEqual([
          `error vm ${vmId}: sidecar unreadable (${how}): kept and listed as Error, its process and files left alone until it is deleted`,
        ]);
      },
    );

    it('keeps a second 12 GB VM off a 24 GB host while its 12 GB process runs', async () => {
      await damaged('not JSON');
      await vms.prepare();
      await expect(vms.spawn(request(12_288, 2))).rejects.toThrow(
        new VmDoesNotFitError(
          'ram_mb: 12288 MB does not fit on this node: 8820 MB committable of 24576 MB (margin 512 MB)',
        ),
      );
      // Its vCPUs count too: 8 cores x 4, 4 of them its own.
      await expect(vms.spawn(request(64, 29))).rejects.toThrow(/^vcpu_count: 29 vCPUs/);
      const small = await vms.spawn(request(64, 28));
      expect(small.created).toBe(true);
    });

    it('is listed with 1 MB and 1 vCPU, as before, when its process does not tell them', async () => {
      await damaged('not JSON', { ...live, ramMb: undefined, vcpuCount: undefined });
      await vms.prepare();
      expect((await vms.report()).committed).toEqual([{ ramAllocMb: 1, vcpuCount: 1, rssMb: 300 }]);
      expect(await vms.list()).toMatchObject([{ vm_id: vmId, ram_alloc_mb: 1, vcpu_count: 1 }]);
    });

    it('lists no value of its process the wire would refuse (a command line made by hand)', async () => {
      const ports = Array.from({ length: 100 }, (_, index) => ({
        host_port: 40_000 + index,
        guest_port: 22,
        protocol: 'tcp' as const,
      }));
      await damaged('not JSON', { ...live, ramMb: 3e9, vcpuCount: 4, hostPorts: ports });
      await vms.prepare();
      expect(await vms.list()).toMatchObject([
        { vm_id: vmId, ram_alloc_mb: 1, vcpu_count: 4, host_ports: [] },
      ]);
    });

    it('counts nothing of a VM whose sidecar is unreadable and whose process is gone', async () => {
      await damaged('not JSON');
      driver.live.clear();
      await vms.prepare();
      expect((await vms.report()).committed).toEqual([]);
      expect(await vms.list()).toMatchObject([
        { vm_id: vmId, state: VmState.Error, ram_alloc_mb: 1 },
      ]);
    });

    it('is stopped by name and its run folder removed only when it is deleted', async () => {
      await damaged('not JSON');
      await vms.prepare();
      await vms.destroy(vmId);
      expect(driver.stopped).toEqual([{ vmId, record: { kind: 'none' } }]);
      expect(await runFolders()).toEqual([]);
      // Its disk waits out VM_DISK_RETENTION_S (a day by default) in deleted/.
      expect(await readdir(join(root, 'disks'))).toEqual([]);
      expect(await readdir(join(root, 'deleted'))).toEqual([`${clock.wallNow()}.${vmId}.qcow2`]);
    });
  });

  describe('a sidecar whose values the wire refuses', () => {
    const vmId = 'vm-00000000000000ee';
    const key = `${'a'.repeat(64)}.${'b'.repeat(64)}`;

    it.each([
      ['vm_type', 'bad type!', 'unknown'],
      ['tenant_id', 'a b', null],
      ['ram_alloc_mb', 3e9, 1],
      ['vcpu_count', 70_000, 1],
      ['started_at', 'yesterday', null],
    ] as const)(
      'with %s %j: listed Error naming it, the rest kept, its heartbeat valid',
      async (field, value, listedAs) => {
        await bed.leftBehind(vmId, {
          tenant_id: 'acme',
          started_at: '2026-08-06T11:00:01.000Z',
          idempotency_key: key,
          created_at: toRfc3339(clock.wallNow()),
          [field]: value,
        });
        await bed.leftBehind('vm-00000000000000ef', {
          started_at: '2026-08-06T11:00:01.000Z',
          desired_state: DesiredVmState.Stopped,
        });
        driver.runState = 'stopped';
        await vms.prepare();
        const { vms: reported } = await vms.report();
        const kept = {
          vm_type: 'web',
          tenant_id: 'acme',
          ram_alloc_mb: 1_024,
          vcpu_count: 2,
          started_at: '2026-08-06T11:00:01.000Z',
        };
        expect(reported).toEqual([
          expect.objectContaining({
            vm_id: vmId,
            state: VmState.Error,
            ...kept,
            [field]: listedAs,
            idempotency_key: key,
          }),
          expect.objectContaining({ vm_id: 'vm-00000000000000ef', state: VmState.Stopped }),
        ]);
        const beat = plainToInstance(
          NodeHeartbeat,
          heartbeat({ node_id: 'node-a', vms: reported }),
        );
        expect(validateSync(beat, { forbidUnknownValues: true })).toEqual([]);
        const [lifeCycle] = await actions.lifeCycles();
        expect(lifeCycle.reason).toBe(
          `sidecar holds values the fleet's wire refuses (${field}); ${field} listed as ${JSON.stringify(listedAs)}`,
        );
        // Nothing is started for it, nor is its sidecar rewritten.
        expect(driver.creates).toEqual([]);
        expect((await files.readSidecar(vmId))?.[field]).toEqual(value);
        expect(logs.filter((line) => line.startsWith('error'))).toEqual([
          `error vm ${vmId}: sidecar holds values the fleet's wire refuses (${field}): kept and listed as Error, its process and files left alone until it is deleted`,
        ]);
      },
    );

    it('keeps the RAM and vCPUs of its running process in place of refused ones, committed', async () => {
      await bed.leftBehind(vmId, { ram_alloc_mb: 3e9, vcpu_count: 70_000 });
      driver.live.set(vmId, {
        record: { kind: 'fake', pid: 881 },
        hostPorts: [],
        rssMb: 50,
        ramMb: 2_048,
        vcpuCount: 2,
        summary: 'fake pid 881',
      });
      await vms.prepare();
      const { vms: reported, committed } = await vms.report();
      expect(reported).toMatchObject([{ vm_id: vmId, ram_alloc_mb: 2_048, vcpu_count: 2 }]);
      expect(committed).toEqual([{ ramAllocMb: 2_048, vcpuCount: 2, rssMb: 50 }]);
      expect(driver.stopped).toEqual([]);
    });

    it('answers a retry of its spawn with it rather than making another VM', async () => {
      await bed.leftBehind(vmId, {
        tenant_id: 'a b',
        idempotency_key: key,
        created_at: toRfc3339(clock.wallNow()),
      });
      const outcome = await vms.spawn(request(1_024, 2), {
        value: key,
        keyHash: 'a'.repeat(64),
        requestHash: 'b'.repeat(64),
      });
      expect(outcome).toMatchObject({ created: false, vm: { vm_id: vmId, state: VmState.Error } });
      expect(await runFolders()).toEqual([vmId]);
    });
  });
});
