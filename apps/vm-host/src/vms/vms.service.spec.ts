import { Logger } from '@nestjs/common';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { CreateVmRequest, VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { VmHostConfig, VmHostConfigError } from '../config/vm-host.config';
import { FakeVmDriver, fakeHostFacts } from '../../../../test/support/fake-vm-driver';
import { CrashFailpoint } from './crash-failpoint';
import { StartedVm, VmDriver } from './vm-driver';
import { VmFiles } from './vm-files';
import { BaseImageMissingError, VmCreateError, VmNotOnNodeError } from './vms.errors';
import { VmsService } from './vms.service';

const STARTED: StartedVm = {
  record: { kind: 'fake', fast: false, pid: 4242 },
  hostPorts: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
  summary: 'fake pid 4242',
};

function request(fields: Partial<CreateVmRequest> = {}): CreateVmRequest {
  return { vm_type: 'web', ram_mb: 96, vcpu_count: 2, prefer_kvm: false, ...fields };
}

/** A host with room for every VM these tests make. */
const roomyHost = fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 });

function vmsService(files: VmFiles, driver: VmDriver, clock: FakeClock): VmsService {
  const config = Object.assign(new VmHostConfig(), { nodeId: 'node-a', vcpuOvercommit: 4 });
  return new VmsService(files, driver, clock, roomyHost, config, new CrashFailpoint(config));
}

describe('VmsService', () => {
  let root: string;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let vms: VmsService;
  let logs: string[];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vms-service-'));
    files = new VmFiles(Object.assign(new VmHostConfig(), { diskDir: root }));
    await files.prepare();
    driver = new FakeVmDriver();
    clock = new FakeClock();
    vms = vmsService(files, driver, clock);
    logs = [];
    jest
      .spyOn(Logger.prototype, 'log')
      .mockImplementation((message: unknown) => void logs.push(`log ${String(message)}`));
    jest
      .spyOn(Logger.prototype, 'error')
      .mockImplementation((message: unknown) => void logs.push(`error ${String(message)}`));
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  /** Settles the create the driver is working on and waits until the service is done with it. */
  async function settleCreate(outcome: StartedVm | Error): Promise<void> {
    const done = firstValueFrom(vms.changes);
    driver.creates.shift()!.settle(outcome);
    await done;
  }

  it('answers Provisioning at once, stays Provisioning while the driver works, then is Running', async () => {
    const { vm: accepted } = await vms.spawn(request({ tenant_id: 'acme', prefer_kvm: true }));
    expect(accepted).toEqual({
      vm_id: expect.stringMatching(/^vm-[0-9a-f]{16}$/),
      vm_type: 'web',
      state: VmState.Provisioning,
      ram_alloc_mb: 96,
      vcpu_count: 2,
      started_at: null,
      tenant_id: 'acme',
      host_ports: [],
    });
    const vmId = accepted.vm_id;
    expect(driver.creates.map(({ spec, record }) => ({ spec, record }))).toEqual([
      {
        spec: { vmId, vmType: 'web', ramMb: 96, vcpuCount: 2 },
        record: { kind: 'fake', fast: true, pid: null },
      },
    ]);
    expect((await vms.list()).map((vm) => vm.state)).toEqual([VmState.Provisioning]);

    clock.advance(1_500);
    await settleCreate(STARTED);
    expect(await vms.list()).toEqual([
      {
        ...accepted,
        state: VmState.Running,
        started_at: '2026-08-06T12:00:01.500Z',
        host_ports: STARTED.hostPorts,
      },
    ]);
    expect(driver.inspected).toEqual([STARTED.record]);
    expect(logs).toEqual([
      `log vm ${vmId} accepted: web, 96 MB, 2 vCPU, fast, tenant acme`,
      `log vm ${vmId} started: fake pid 4242`,
    ]);
  });

  it('reports what the driver sees of a started VM: stopped, or not answering yet', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(request());
    await settleCreate(STARTED);
    driver.runState = 'stopped';
    expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Stopped }]);
    driver.runState = 'unknown';
    expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Provisioning }]);
  });

  it('lists a VM whose create step failed as Error, naming the step in the sidecar and the log', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(request());
    await settleCreate(new VmCreateError('seed ISO', 'genisoimage failed: no space left'));
    expect(await vms.list()).toMatchObject([
      { vm_id: vmId, state: VmState.Error, host_ports: [], started_at: null },
    ]);
    expect((await files.readSidecar(vmId))?.error).toBe(
      'seed ISO: genisoimage failed: no space left',
    );
    expect(logs).toContain(
      `error vm ${vmId} failed at the seed ISO: genisoimage failed: no space left`,
    );
    expect(driver.inspected).toEqual([]);
  });

  it('refuses a VM the driver cannot make now before accepting it, leaving nothing behind', async () => {
    driver.planFailure = new BaseImageMissingError('VM_BASE_IMAGE /srv/base.qcow2 does not exist');
    await expect(vms.spawn(request())).rejects.toThrow(driver.planFailure);
    expect(await readdir(join(root, 'run'))).toEqual([]);
    expect(driver.creates).toEqual([]);
  });

  it('refuses to destroy a VM this node does not have', async () => {
    await expect(vms.destroy('vm-0123456789abcdef')).rejects.toThrow(
      new VmNotOnNodeError('vm-0123456789abcdef'),
    );
    expect(driver.stopped).toEqual([]);
  });

  it('destroys through the driver with its record, removes the runtime files, and then no longer has it', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(request());
    await settleCreate(STARTED);
    const changed = firstValueFrom(vms.changes);
    await vms.destroy(vmId);
    await changed;
    expect(driver.stopped).toEqual([{ vmId, record: STARTED.record }]);
    expect(await readdir(join(root, 'run'))).toEqual([]);
    expect(await vms.list()).toEqual([]);
    await expect(vms.destroy(vmId)).rejects.toThrow(VmNotOnNodeError);
  });

  it('destroys a VM still provisioning only once the driver is done with it', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(request());
    const destroyed = vms.destroy(vmId);
    driver.creates.shift()!.settle(STARTED);
    await destroyed;
    expect(driver.stopped).toEqual([{ vmId, record: STARTED.record }]);
    expect(await vms.list()).toEqual([]);
  });

  describe('after an agent restart', () => {
    const vmId = 'vm-00000000000000aa';
    const common = {
      vm_id: vmId,
      vm_type: 'web',
      tenant_id: null,
      ram_alloc_mb: 96,
      vcpu_count: 1,
      host_ports: [],
      created_at: '2026-08-06T11:00:00.000Z',
      error: null,
    };

    /** A sidecar as an agent that is gone left it. */
    async function leftBehind(sidecar: object): Promise<void> {
      await rm(files.runDir(vmId), { recursive: true, force: true });
      await mkdir(files.runDir(vmId));
      await writeFile(join(files.runDir(vmId), 'vm.json'), JSON.stringify(sidecar));
    }

    it('lists a VM whose provisioning the old agent never finished (no pid) as Error', async () => {
      await leftBehind({ ...common, started_at: null, driver: { kind: 'fake', pid: null } });
      const restarted = vmsService(files, driver, clock);
      expect(await restarted.list()).toMatchObject([{ vm_id: vmId, state: VmState.Error }]);
      expect(driver.inspected).toEqual([]);
    });

    it('reads sidecars of agents before drivers: no pid is Error, a pid is asked of the driver', async () => {
      const restarted = vmsService(files, driver, clock);
      await leftBehind({ ...common, accel: 'tcg', started_at: null, pid: null });
      expect(await restarted.list()).toMatchObject([{ vm_id: vmId, state: VmState.Error }]);

      await leftBehind({
        ...common,
        accel: 'kvm',
        started_at: '2026-08-06T11:00:01.000Z',
        pid: 4242,
      });
      expect(await restarted.list()).toMatchObject([{ vm_id: vmId, state: VmState.Running }]);
      expect(driver.inspected).toEqual([{ kind: 'qemu', accel: 'kvm', pid: 4242 }]);

      await restarted.destroy(vmId);
      expect(driver.stopped).toEqual([{ vmId, record: { kind: 'qemu', accel: 'kvm', pid: 4242 } }]);
    });
  });

  describe('prepare', () => {
    it('makes the VM_DISK_DIR layout and checks the tools', async () => {
      const fresh = join(root, 'fresh');
      const service = vmsService(
        new VmFiles(Object.assign(new VmHostConfig(), { diskDir: fresh })),
        driver,
        clock,
      );
      await service.prepare();
      expect((await readdir(fresh)).sort()).toEqual(['base', 'disks', 'run']);
      expect(driver.toolsChecked).toBe(true);
    });

    it('refuses a VM_DISK_DIR that cannot be made, or that the driver cannot use, saying why', async () => {
      const file = join(root, 'a-file');
      await writeFile(file, '');
      const onFile = vmsService(
        new VmFiles(Object.assign(new VmHostConfig(), { diskDir: file })),
        driver,
        clock,
      );
      const error = await onFile.prepare().catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(VmHostConfigError);
      expect((error as Error).message).toMatch(
        new RegExp(`^VM_DISK_DIR ${file} is not usable: .*ENOTDIR`),
      );

      driver.diskDirProblem = new Error(
        'too long: QMP socket paths under it would exceed 107 bytes',
      );
      await expect(vms.prepare()).rejects.toThrow(
        new VmHostConfigError(
          `VM_DISK_DIR ${root} is not usable: too long: QMP socket paths under it would exceed 107 bytes`,
        ),
      );
      expect(driver.toolsChecked).toBe(false);
    });
  });
});
