import { Logger } from '@nestjs/common';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { CreateVmRequest, MAX_VMS_PER_HEARTBEAT, VmState } from '@app/fleet-domain';
import { JsonErrorFilter } from '@app/daemon';
import { FakeClock } from '../../../../test/support/fake-clock';
import { FakeVmDriver, fakeHostFacts } from '../../../../test/support/fake-vm-driver';
import { VmHostConfig } from '../config/vm-host.config';
import { VM_HOST_ERROR_STATUSES } from '../vm-host-error.statuses';
import type { HostCapacity } from '../host-facts/host-facts.service';
import { CrashFailpoint } from './crash-failpoint';
import { SpawnKey, parseSpawnKey } from './idempotency-key';
import { QEMU_OVERHEAD_MB } from './vm-capacity';
import { StartedVm, VmSpec } from './vm-driver';
import { VmFiles, VmSidecar } from './vm-files';
import {
  IdempotencyKeyReusedError,
  VmCreateError,
  VmDiskError,
  VmDoesNotFitError,
} from './vms.errors';
import { VmsService } from './vms.service';

const HOST: HostCapacity = { ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 };

function request(fields: Partial<CreateVmRequest> = {}): CreateVmRequest {
  return { vm_type: 'web', ram_mb: 96, vcpu_count: 1, prefer_kvm: false, ...fields };
}

function key(client: string, body: string): SpawnKey {
  return parseSpawnKey(`${client.repeat(64)}.${body.repeat(64)}`)!;
}

function started(pid: number): StartedVm {
  return {
    record: { kind: 'fake', fast: false, pid },
    hostPorts: [{ host_port: 40_000 + pid, guest_port: 22, protocol: 'tcp' }],
    summary: `fake pid ${pid}`,
  };
}

/** The status the agent's error filter answers `error` with. */
function statusOf(error: Error): number {
  return new JsonErrorFilter(VM_HOST_ERROR_STATUSES).body(error).statusCode;
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

describe('VmsService keeps VMs safe', () => {
  let root: string;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let host: HostCapacity;
  let vms: VmsService;
  let logs: string[];

  function service(vcpuOvercommit = 4): VmsService {
    const config = Object.assign(new VmHostConfig(), { nodeId: 'node-a', vcpuOvercommit });
    return new VmsService(
      files,
      driver,
      clock,
      { capacity: () => fakeHostFacts(host).capacity() } as never,
      config,
      new CrashFailpoint(config),
    );
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vms-safety-'));
    files = new VmFiles(Object.assign(new VmHostConfig(), { diskDir: root }));
    await files.prepare();
    driver = new FakeVmDriver();
    clock = new FakeClock();
    host = { ...HOST };
    vms = service();
    logs = [];
    const keep =
      (level: string) =>
      (message: unknown): void =>
        void logs.push(`${level} ${String(message)}`);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(keep('log'));
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(keep('warn'));
    jest.spyOn(Logger.prototype, 'error').mockImplementation(keep('error'));
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  async function runFolders(): Promise<string[]> {
    return readdir(join(root, 'run'));
  }

  /** A sidecar as an agent that is gone left it. */
  async function leftBehind(vmId: string, fields: Partial<VmSidecar> = {}): Promise<void> {
    await mkdir(files.runDir(vmId));
    const sidecar: VmSidecar = {
      vm_id: vmId,
      vm_type: 'web',
      tenant_id: null,
      ram_alloc_mb: 1_024,
      vcpu_count: 2,
      host_ports: [],
      created_at: '2026-08-06T11:00:00.000Z',
      started_at: null,
      error: null,
      driver: { kind: 'fake', pid: null },
      idempotency_key: null,
      ...fields,
    };
    await writeFile(join(files.runDir(vmId), 'vm.json'), JSON.stringify(sidecar));
  }

  describe('capacity', () => {
    it('refuses 1 TiB naming ram_mb and the numbers, leaving nothing behind', async () => {
      const refusal = vms.spawn(request({ ram_mb: 1_048_576 }));
      await expect(refusal).rejects.toThrow(
        new VmDoesNotFitError(
          'ram_mb: 1048576 MB does not fit on this node: 21064 MB committable of 24576 MB (margin 512 MB)',
        ),
      );
      expect(await runFolders()).toEqual([]);
      expect(driver.filesMade).toEqual([]);
      expect(logs).toContain(
        'warn node node-a refused a VM: ram_mb: 1048576 MB does not fit on this node: 21064 MB committable of 24576 MB (margin 512 MB)',
      );
    });

    it('counts each accepted VM with all its RAM: two of 10000 MB fit on 24 GB, a third does not', async () => {
      await vms.spawn(request({ ram_mb: 10_000 }));
      await vms.spawn(request({ ram_mb: 10_000 }));
      // Nothing was touched: the host's sampled use is what it was.
      const committable = 24_576 - (3_000 + 2 * (10_000 + QEMU_OVERHEAD_MB)) - 512;
      await expect(vms.spawn(request({ ram_mb: 10_000 }))).rejects.toThrow(
        `ram_mb: 10000 MB does not fit on this node: ${committable} MB committable of 24576 MB (margin 512 MB)`,
      );
      expect(driver.creates).toHaveLength(2);
    });

    it('judges concurrent spawns one after the other, so together they cannot over-commit', async () => {
      const outcomes = await Promise.allSettled(
        [1, 2, 3].map(() => vms.spawn(request({ ram_mb: 10_000 }))),
      );
      expect(outcomes.map((outcome) => outcome.status).sort()).toEqual([
        'fulfilled',
        'fulfilled',
        'rejected',
      ]);
      expect(await runFolders()).toHaveLength(2);
    });

    it('refuses vCPUs beyond cores x VM_VCPU_OVERCOMMIT, naming vcpu_count', async () => {
      host.cpu_cores = 2;
      vms = service(1);
      await vms.spawn(request({ vcpu_count: 2 }));
      await expect(vms.spawn(request({ vcpu_count: 1 }))).rejects.toThrow(
        new VmDoesNotFitError(
          'vcpu_count: 1 vCPUs do not fit on this node: 0 committable of 2 (2 cores x VM_VCPU_OVERCOMMIT 1)',
        ),
      );
    });

    it('counts a VM whose process runs (its RAM as given, not as resident), but not a dead one', async () => {
      await leftBehind('vm-00000000000000a1', {
        ram_alloc_mb: 16_000,
        started_at: '2026-08-06T11:00:01.000Z',
        driver: { kind: 'fake', pid: 11 },
      });
      await leftBehind('vm-00000000000000a2', {
        ram_alloc_mb: 16_000,
        started_at: '2026-08-06T11:00:01.000Z',
        driver: { kind: 'fake', pid: 12 },
      });
      driver.live.set('vm-00000000000000a1', {
        record: { kind: 'fake', pid: 11 },
        hostPorts: [],
        rssMb: 500,
        summary: 'fake pid 11',
      });
      host.ram_used_mb = 3_500; // the live guest's 500 MB included
      const committable = 24_576 - (3_000 + 16_000 + QEMU_OVERHEAD_MB) - 512;
      await expect(vms.spawn(request({ ram_mb: committable + 1 }))).rejects.toThrow(
        VmDoesNotFitError,
      );
      await vms.spawn(request({ ram_mb: committable }));
    });

    it('refuses a VM beyond the most a heartbeat may report, counting VMs in any state', async () => {
      const ids = Array.from(
        { length: MAX_VMS_PER_HEARTBEAT - 1 },
        (_, index) => `vm-${index.toString(16).padStart(16, '0')}`,
      );
      await Promise.all(ids.map((vmId) => leftBehind(vmId, { ram_alloc_mb: 1, error: 'failed' })));
      const { vm } = await vms.spawn(request());
      expect(vm.state).toBe(VmState.Provisioning);
      const refusal = vms.spawn(request());
      await expect(refusal).rejects.toThrow(
        new VmDoesNotFitError(
          `this node holds ${MAX_VMS_PER_HEARTBEAT} VMs, the most a heartbeat may report (limit ${MAX_VMS_PER_HEARTBEAT}); delete one first`,
        ),
      );
      expect(await runFolders()).toHaveLength(MAX_VMS_PER_HEARTBEAT);
      await vms.destroy(ids[0]);
      expect((await vms.spawn(request())).created).toBe(true);
    });

    it('reports what is committed: VMs provisioning and VMs whose process lives, not failed ones', async () => {
      await leftBehind('vm-00000000000000a1', {
        started_at: '2026-08-06T11:00:01.000Z',
        driver: { kind: 'fake', pid: 11 },
      });
      await leftBehind('vm-00000000000000a2', { error: 'disk: qemu-img failed' });
      driver.live.set('vm-00000000000000a1', {
        record: { kind: 'fake', pid: 11 },
        hostPorts: [],
        rssMb: 40,
        summary: 'fake pid 11',
      });
      await vms.spawn(request({ ram_mb: 2_048, vcpu_count: 1 }));
      const { committed } = await vms.report();
      expect(committed).toEqual(
        expect.arrayContaining([
          { ramAllocMb: 1_024, vcpuCount: 2, rssMb: 40 },
          { ramAllocMb: 2_048, vcpuCount: 1, rssMb: 0 },
        ]),
      );
      expect(committed).toHaveLength(2);
    });
  });

  describe('Idempotency-Key', () => {
    it('answers a retry with the VM the first spawn made, and makes no second one', async () => {
      const first = await vms.spawn(request({ tenant_id: 'acme' }), key('a', 'b'));
      const again = await vms.spawn(request({ tenant_id: 'acme' }), key('a', 'b'));
      expect(first.created).toBe(true);
      expect(again).toEqual({ vm: first.vm, created: false });
      expect(driver.creates).toHaveLength(1);
      expect(await runFolders()).toEqual([first.vm.vm_id]);
    });

    it('makes one VM for concurrent spawns with the same key', async () => {
      const outcomes = await Promise.all([1, 2, 3].map(() => vms.spawn(request(), key('a', 'b'))));
      expect(new Set(outcomes.map(({ vm }) => vm.vm_id)).size).toBe(1);
      expect(outcomes.map(({ created }) => created).sort()).toEqual([false, false, true]);
      expect(driver.filesMade).toHaveLength(1);
      expect(driver.creates).toHaveLength(1);
    });

    it('refuses the same key with another request, naming Idempotency-Key and the VM', async () => {
      const { vm } = await vms.spawn(request(), key('a', 'b'));
      await expect(vms.spawn(request({ ram_mb: 128 }), key('a', 'c'))).rejects.toThrow(
        new IdempotencyKeyReusedError(
          `Idempotency-Key was used for another request (vm ${vm.vm_id}): a retry must repeat the request it was first sent with`,
        ),
      );
      expect(await runFolders()).toEqual([vm.vm_id]);
    });

    it('keeps the key with the VM across an agent restart, for a day', async () => {
      const { vm } = await vms.spawn(request(), key('a', 'b'));
      const restarted = service();
      expect(await restarted.spawn(request(), key('a', 'b'))).toMatchObject({
        vm: { vm_id: vm.vm_id },
        created: false,
      });
      clock.advance(24 * 3600_000);
      const later = await restarted.spawn(request(), key('a', 'b'));
      expect(later.created).toBe(true);
      expect(later.vm.vm_id).not.toBe(vm.vm_id);
    });

    it('tells the heartbeat the key of each VM while it is kept, and not of VMs made without one', async () => {
      const keyed = await vms.spawn(request(), key('a', 'b'));
      const plain = await vms.spawn(request());
      const reported = (await vms.report()).vms;
      expect(reported.find((vm) => vm.vm_id === keyed.vm.vm_id)?.idempotency_key).toBe(
        key('a', 'b').value,
      );
      expect(reported.find((vm) => vm.vm_id === plain.vm.vm_id)).not.toHaveProperty(
        'idempotency_key',
      );
      expect(await vms.list()).not.toContainEqual(
        expect.objectContaining({ idempotency_key: expect.anything() }),
      );
      clock.advance(24 * 3600_000);
      expect((await vms.report()).vms.map((vm) => vm.idempotency_key)).toEqual([
        undefined,
        undefined,
      ]);
    });
  });

  describe('a full or unwritable VM_DISK_DIR', () => {
    function failMakingTheDisk(cause: Error): void {
      driver.makeFiles = async (spec: VmSpec) => {
        await writeFile(files.disk(spec.vmId), 'half a disk');
        throw new VmCreateError('disk', `qemu-img failed: ${cause.message}`, { cause });
      };
    }

    it('is a 507 naming the folder and ENOSPC, leaving no run folder and no disk', async () => {
      failMakingTheDisk(new Error("Could not create '/x': No space left on device"));
      const error = (await vms.spawn(request()).catch((thrown: unknown) => thrown)) as VmDiskError;
      expect(error).toBeInstanceOf(VmDiskError);
      expect(error.full).toBe(true);
      expect(statusOf(error)).toBe(507);
      expect(error.message).toBe(
        `VM_DISK_DIR ${root}: no space left on device (ENOSPC) while making the VM's disk; nothing of the VM was kept`,
      );
      expect(await runFolders()).toEqual([]);
      expect(await readdir(join(root, 'disks'))).toEqual([]);
      expect(driver.creates).toEqual([]);
      expect(await vms.list()).toEqual([]);
    });

    it('is a 500 naming EACCES when the folder may not be written', async () => {
      failMakingTheDisk(errnoError('EACCES', "EACCES: permission denied, open '/x'"));
      const error = (await vms.spawn(request()).catch((thrown: unknown) => thrown)) as VmDiskError;
      expect(error.full).toBe(false);
      expect(statusOf(error)).toBe(500);
      expect(error.message).toContain(`VM_DISK_DIR ${root}: permission denied (EACCES)`);
      expect(await runFolders()).toEqual([]);
    });

    it('is refused when the sidecar cannot be written, and when the base image cannot be made', async () => {
      jest
        .spyOn(files, 'writeSidecar')
        .mockRejectedValueOnce(errnoError('ENOSPC', 'ENOSPC: no space left on device, write'));
      await expect(vms.spawn(request())).rejects.toThrow(
        `VM_DISK_DIR ${root}: no space left on device (ENOSPC) while writing the sidecar; nothing of the VM was kept`,
      );
      expect(await runFolders()).toEqual([]);

      driver.planFailure = new Error('qemu-img failed: No space left on device');
      await expect(vms.spawn(request())).rejects.toThrow(
        `VM_DISK_DIR ${root}: no space left on device (ENOSPC) while making the base image; nothing of the VM was kept`,
      );
      expect(await runFolders()).toEqual([]);
    });

    it('still lists a VM whose tool failed for another reason as Error, as before', async () => {
      driver.filesFailure = new VmCreateError('seed ISO', 'genisoimage failed: not installed');
      const { vm, created } = await vms.spawn(request());
      expect(created).toBe(true);
      expect(vm.state).toBe(VmState.Error);
      expect(await vms.list()).toMatchObject([{ vm_id: vm.vm_id, state: VmState.Error }]);
      expect(logs).toContain(
        `error vm ${vm.vm_id} failed at the seed ISO: genisoimage failed: not installed`,
      );
    });
  });

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

    it('marks a VM never started and with no process as Error, once, saying why', async () => {
      await leftBehind(vmId);
      await vms.report();
      await vms.report();
      expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Error }]);
      expect((await files.readSidecar(vmId))?.error).toBe(
        'agent stopped before the VM was started',
      );
      expect(logs.filter((line) => line.startsWith('error'))).toEqual([
        `error vm ${vmId} failed: agent stopped before the VM was started; listed as Error until deleted`,
      ]);
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
      expect((await files.readSidecar(vmId))?.error).toBe(
        'agent stopped before the VM was started',
      );
    });

    it('deletes a VM that has no pid through the driver, which stops it by name', async () => {
      await leftBehind(vmId);
      driver.live.set(vmId, {
        record: { kind: 'fake', pid: 779 },
        hostPorts: [],
        rssMb: 40,
        summary: 'fake pid 779',
      });
      await vms.destroy(vmId);
      expect(driver.stopped).toEqual([{ vmId, record: { kind: 'fake', pid: null } }]);
      expect(driver.live.size).toBe(0);
      expect(await runFolders()).toEqual([]);
    });
  });

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
