import { Logger } from '@nestjs/common';
import { mkdir, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { FakeVmDriver } from '../../../../test/support/fake-vm-driver';
import {
  FAKE_STARTED,
  VmBed,
  closeVmBed,
  createRequest,
  openVmBed,
  roomyVmsService,
} from '../../../../test/support/vm-services';
import { VmHostConfigError } from '../config/vm-host.config';
import { VmDiskRoom } from './admission/vm-disk-room';
import { StartedVm } from './vm-driver';
import { VmFiles } from './files/vm-files';
import { SpawnDeadlinePassedError, VmNotOnNodeError } from './vms.errors';
import { VmsService } from './vms.service';
import { vmHostConfig } from '../../../../test/support/configs';

describe('VmsService', () => {
  let bed: VmBed;
  let root: string;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let vms: VmsService;

  beforeEach(async () => {
    bed = await openVmBed('vms-service-');
    ({ root, files, driver, clock } = bed);
    vms = await roomyVmsService(files, driver, clock);
  });

  afterEach(() => {
    jest.restoreAllMocks();
    return closeVmBed(bed);
  });

  /** Settles the create the driver is working on and waits until the service is done with it. */
  async function settleCreate(outcome: StartedVm | Error): Promise<void> {
    const done = firstValueFrom(vms.changes);
    driver.creates.shift()!.settle(outcome);
    await done;
  }

  it('refuses a spawn read past its deadline by its clock (409, naming it), making nothing; takes one before', async () => {
    const deadline = new Date(clock.wallNow() + 1_000).toISOString();
    clock.advance(1_001);
    await expect(vms.spawn({ ...createRequest(), deadline })).rejects.toThrow(
      new SpawnDeadlinePassedError(deadline, clock.wallNow()),
    );
    expect(driver.creates).toEqual([]);
    expect(await vms.list()).toEqual([]);
    // To the nanosecond: a deadline a fraction of a millisecond ahead still takes it.
    const justAhead = `${new Date(clock.wallNow()).toISOString().slice(0, -1)}000001Z`;
    const { created } = await vms.spawn({ ...createRequest(), deadline: justAhead });
    expect(created).toBe(true);
    expect(driver.creates).toHaveLength(1);
  });

  it('refuses a spawn whose deadline passes while it waits to be admitted, making nothing', async () => {
    const deadline = new Date(clock.wallNow() + 1_000).toISOString();
    // Time passes between arrival and the taking of its id (a create ahead of it, a frozen agent).
    const plan = driver.plan.bind(driver);
    jest.spyOn(driver, 'plan').mockImplementationOnce((options) => {
      clock.advance(1_001);
      return plan(options);
    });
    const refused = vms.spawn({ ...createRequest(), deadline });
    await expect(refused).rejects.toThrow(SpawnDeadlinePassedError);
    // Refused by the second look, after the time passed.
    await expect(refused).rejects.toThrow(new SpawnDeadlinePassedError(deadline, clock.wallNow()));
    expect(driver.creates).toEqual([]);
    expect(await vms.list()).toEqual([]);
  });

  it("keeps a spawn's deadline in the sidecar until the files are made, when it is answered", async () => {
    const deadline = new Date(clock.wallNow() + 10_000).toISOString();
    const made = driver.makeFiles.bind(driver);
    let deadlineWhileMaking: string | undefined;
    jest.spyOn(driver, 'makeFiles').mockImplementationOnce(async (spec) => {
      deadlineWhileMaking = (await files.readSidecar(spec.vmId))?.spawn_deadline;
      return made(spec);
    });
    const { vm } = await vms.spawn({ ...createRequest(), deadline });
    expect(deadlineWhileMaking).toBe(deadline);
    expect((await files.readSidecar(vm.vm_id))?.spawn_deadline).toBeUndefined();
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
    } = await vms.spawn(createRequest());
    await settleCreate(FAKE_STARTED);
    const changed = firstValueFrom(vms.changes);
    await vms.destroy(vmId);
    await changed;
    expect(driver.stopped).toEqual([{ vmId, record: FAKE_STARTED.record }]);
    expect(await readdir(join(root, 'run'))).toEqual([]);
    expect(await vms.list()).toEqual([]);
    await expect(vms.destroy(vmId)).rejects.toThrow(VmNotOnNodeError);
  });

  it('destroys a VM still provisioning only once the driver is done with it', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(createRequest());
    const destroyed = vms.destroy(vmId);
    driver.creates.shift()!.settle(FAKE_STARTED);
    await destroyed;
    expect(driver.stopped).toEqual([{ vmId, record: FAKE_STARTED.record }]);
    expect(await vms.list()).toEqual([]);
  });

  it('deletes a VM that has no pid through the driver, which stops it by name', async () => {
    const vmId = 'vm-00000000000000aa';
    await bed.leftBehind(vmId);
    driver.live.set(vmId, {
      record: { kind: 'fake', pid: 779 },
      hostPorts: [],
      rssMb: 40,
      summary: 'fake pid 779',
    });
    await vms.destroy(vmId);
    expect(driver.stopped).toEqual([{ vmId, record: { kind: 'fake', pid: null } }]);
    expect(driver.live.size).toBe(0);
    expect(await bed.runFolders()).toEqual([]);
  });

  it('stops leaving its VMs running and stopped alike, and says so naming them; with none, says nothing', async () => {
    const warnings: string[] = [];
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
    await vms.beforeApplicationShutdown();
    expect(warnings).toEqual([]);

    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(createRequest());
    await settleCreate(FAKE_STARTED);
    await vms.beforeApplicationShutdown();
    expect(warnings).toEqual([
      `agent stopping; its 1 VM(s) (${vmId}) are left as they are: running ones keep running, unmanaged. Once the node drops out (30 s) the controller still lists them, with node_silent_since, but cannot delete them (409) until this agent starts again with the same VM_NODE_ID and VM_DISK_DIR. To retire this node, delete them through the controller first`,
    ]);
    expect(driver.stopped).toEqual([]);
    expect(await readdir(join(root, 'run'))).toEqual([vmId]);
  });

  describe('disk room in the heartbeat', () => {
    it("reports VM_DISK_DIR's room in MB, each VM's disk at its virtual size (the base image's)", async () => {
      driver.imageBytes = 3 * 1024 * 1024;
      await vms.spawn(createRequest());
      await settleCreate(FAKE_STARTED);
      const found = await statfs(root);
      const { diskRoom } = await vms.report();
      const totalMb = (found.blocks * found.bsize) / (1024 * 1024);
      expect(diskRoom).toMatchObject({ committed_mb: 3, overcommit: 1 });
      expect(diskRoom!.reserve_mb).toBe(Math.floor(Math.min(totalMb * 0.05, 2048)));
      expect(diskRoom!.room_mb).toBeGreaterThan(0);
      expect(diskRoom!.room_mb).toBeLessThanOrEqual(totalMb);
      expect(diskRoom!.committable_mb).toBeLessThan(diskRoom!.room_mb);
    });

    it("reports each VM's tenant and disk_gb, what a tenant's quotas count on the controller", async () => {
      await vms.spawn(createRequest({ tenant_id: 'acme', disk_gb: 1 }));
      await vms.spawn(createRequest());
      await settleCreate(FAKE_STARTED);
      const { vms: reported } = await vms.report();
      expect(
        reported
          .map(({ tenant_id, disk_gb }) => ({ tenant_id, disk_gb }))
          .sort((a, b) => String(a.tenant_id).localeCompare(String(b.tenant_id))),
      ).toEqual([
        { tenant_id: 'acme', disk_gb: 1 },
        { tenant_id: null, disk_gb: undefined },
      ]);
    });

    it('reports no disk room, and the VMs still, when the base image cannot be read', async () => {
      await vms.spawn(createRequest());
      await settleCreate(FAKE_STARTED);
      jest.spyOn(driver, 'imageDiskBytes').mockRejectedValue(new Error('no image'));
      const report = await vms.report();
      expect(report).not.toHaveProperty('diskRoom');
      expect(report.vms).toHaveLength(1);
    });

    it('reports no disk room when statfs of VM_DISK_DIR fails', async () => {
      const gone = new VmFiles(vmHostConfig({ VM_DISK_DIR: join(root, 'missing') }));
      const room = new VmDiskRoom(gone, driver, vmHostConfig({ VM_NODE_ID: 'node-a' }));
      expect(await room.room([])).toBeUndefined();
    });
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
      const restarted = await roomyVmsService(files, driver, clock);
      expect(await restarted.list()).toMatchObject([{ vm_id: vmId, state: VmState.Error }]);
      expect(driver.inspected).toEqual([]);
    });

    it('reads sidecars of agents before drivers: no pid is Error, a pid is asked of the driver', async () => {
      const restarted = await roomyVmsService(files, driver, clock);
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
      const service = await roomyVmsService(
        new VmFiles(vmHostConfig({ VM_DISK_DIR: fresh })),
        driver,
        clock,
      );
      await service.prepare();
      expect((await readdir(fresh)).sort()).toEqual(['base', 'deleted', 'disks', 'run']);
      expect(driver.toolsChecked).toBe(true);
    });

    it('refuses a VM_DISK_DIR that cannot be made, or that the driver cannot use, saying why', async () => {
      const file = join(root, 'a-file');
      await writeFile(file, '');
      const onFile = await roomyVmsService(
        new VmFiles(vmHostConfig({ VM_DISK_DIR: file })),
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
