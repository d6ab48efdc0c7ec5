import { createRequest } from '../../../../../test/factories/create-request.factory';
import { readdir, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CreateVmRequest,
  HYPERVISOR_OVERHEAD_MB,
  MAX_VMS_PER_HEARTBEAT,
  VmState,
} from '@app/fleet-domain';
import { JsonErrorFilter } from '@app/daemon';
import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeVmDriver, fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import type { HostCapacity, HostFactsService } from '../../host-facts/host-facts.service';
import { SpawnKey, parseSpawnKey } from './idempotency-key';
import { VmAdmissionService } from './vm-admission.service';
import { SOCKET_PORT_PROBE } from '../ports/port-probe';
import { VmSpec } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import {
  IdempotencyKeyReusedError,
  VmCreateError,
  VmCreationUnavailableError,
  VmDiskError,
  VmDiskTooSmallError,
  VmDoesNotFitError,
} from '../vms.errors';
import { VMS_ERROR_STATUSES } from '../vms.error-statuses';
import { VmsService } from '../vms.service';

const HOST: HostCapacity = { ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 };

/** A create of one vCPU unless the fields given say otherwise. */
function request(fields: Partial<CreateVmRequest> = {}): CreateVmRequest {
  return createRequest({ vcpu_count: 1, ...fields });
}

function key(client: string, body: string): SpawnKey {
  return parseSpawnKey(`${client.repeat(64)}.${body.repeat(64)}`)!;
}

/** The status the agent's error filter answers `error` with. */
function statusOf(error: Error): number {
  return new JsonErrorFilter(VMS_ERROR_STATUSES).body(error).statusCode;
}

function errnoError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

describe('VmAdmissionService', () => {
  let bed: VmBed;
  let root: string;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let host: HostCapacity;
  let admission: VmAdmissionService;
  let vms: VmsService;
  let logs: string[];

  /** The services of an agent (a restarted one when called again) on the same disk and host. */
  async function service(
    vcpuOvercommit = 4,
    diskOvercommit = 1,
  ): Promise<{ admission: VmAdmissionService; vms: VmsService }> {
    const config = vmHostConfig({
      VM_NODE_ID: 'node-a',
      VM_VCPU_OVERCOMMIT: String(vcpuOvercommit),
      VM_DISK_OVERCOMMIT: String(diskOvercommit),
    });
    // The host as the test has set it by the time capacity is asked for.
    const hostFacts = { capacity: () => fakeHostFacts(host).capacity() } as HostFactsService;
    return vmServices({ files, driver, clock, hostFacts, config });
  }

  beforeEach(async () => {
    bed = await openVmBed('vm-admission-');
    ({ root, files, driver, clock, logs } = bed);
    host = { ...HOST };
    ({ admission, vms } = await service());
  });

  afterEach(() => closeVmBed(bed));

  const runFolders = (): Promise<string[]> => bed.runFolders();
  const leftBehind: VmBed['leftBehind'] = (vmId, fields) => bed.leftBehind(vmId, fields);

  it('refuses a VM the driver cannot make now before accepting it, leaving nothing behind', async () => {
    driver.planFailure = new VmCreationUnavailableError(
      'VM_BASE_IMAGE /srv/base.qcow2 does not exist',
    );
    await expect(admission.spawn(request())).rejects.toThrow(driver.planFailure);
    expect(await readdir(join(root, 'run'))).toEqual([]);
    expect(driver.creates).toEqual([]);
  });

  describe('the vm_id the controller minted', () => {
    it('makes the VM under it, and refuses it (409) once taken, leaving the first VM as it was', async () => {
      const { vm } = await admission.spawn({ ...request(), vm_id: 'vm-00000000000c0de1' });
      expect(vm.vm_id).toBe('vm-00000000000c0de1');
      expect(await runFolders()).toEqual(['vm-00000000000c0de1']);
      const again = admission.spawn({ ...request({ ram_mb: 64 }), vm_id: 'vm-00000000000c0de1' });
      await expect(again).rejects.toThrow(
        'vm_id vm-00000000000c0de1 is already taken on this node; no VM was made',
      );
      expect(statusOf((await again.catch((error: Error) => error)) as Error)).toBe(409);
      expect(await runFolders()).toEqual(['vm-00000000000c0de1']);
      expect((await vms.list()).map((listed) => [listed.vm_id, listed.ram_alloc_mb])).toEqual([
        ['vm-00000000000c0de1', 96],
      ]);
    });

    it('mints one of its own when the request has none (a controller of the original services)', async () => {
      const { vm } = await admission.spawn(request());
      expect(vm.vm_id).toMatch(/^vm-[0-9a-f]{16}$/);
    });
  });

  describe('published ports', () => {
    it('gives SSH first, then each port asked for, and starts the VM with exactly those', async () => {
      const { vm } = await admission.spawn(
        request({
          ports: [
            { guest_port: 8080, protocol: 'tcp' },
            { guest_port: 53, protocol: 'udp' },
          ],
        }),
      );
      const [forwards] = driver.creates.map(({ spec }) => spec.forwards);
      expect(forwards?.map(({ guest_port, protocol }) => `${guest_port}/${protocol}`)).toEqual([
        '22/tcp',
        '8080/tcp',
        '53/udp',
      ]);
      // Each on a host port of its own, of its protocol (a UDP port may share a TCP one's number).
      const bound = forwards?.map(({ host_port, protocol }) => `${host_port}/${protocol}`);
      expect(new Set(bound).size).toBe(3);
      expect(vm.host_ports).toEqual([]);
    });

    it('refuses (422) a host_port another VM here holds, naming it, and makes nothing', async () => {
      // One free on this machine now, whatever else runs beside the test.
      const freePort = await SOCKET_PORT_PROBE.anyFree('127.0.0.1', 'tcp');
      await admission.spawn(
        request({ ports: [{ guest_port: 80, protocol: 'tcp', host_port: freePort }] }),
      );
      expect(await runFolders()).toHaveLength(1);
      const again = admission.spawn(
        request({ ports: [{ guest_port: 80, protocol: 'tcp', host_port: freePort }] }),
      );
      await expect(again).rejects.toThrow(
        new RegExp(
          `^ports\\[0\\]\\.host_port: ${freePort}/tcp on node node-a \\(127\\.0\\.0\\.1\\) is held by vm vm-[0-9a-f]{16}; no VM was made$`,
        ),
      );
      expect(statusOf((await again.catch((error: Error) => error)) as Error)).toBe(422);
      expect(await runFolders()).toHaveLength(1);
      expect(driver.creates).toHaveLength(1);
    });

    it("refuses the agent's own port (a fleet daemon's), naming it", async () => {
      await expect(
        admission.spawn(request({ ports: [{ guest_port: 80, protocol: 'tcp', host_port: 9204 }] })),
      ).rejects.toThrow(
        'ports[0].host_port: 9204/tcp on node node-a (127.0.0.1) is a fleet daemon port',
      );
      expect(await runFolders()).toEqual([]);
    });
  });

  describe('capacity', () => {
    it('refuses 1 TiB naming ram_mb and the numbers, leaving nothing behind', async () => {
      const refusal = admission.spawn(request({ ram_mb: 1_048_576 }));
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
      await admission.spawn(request({ ram_mb: 10_000 }));
      await admission.spawn(request({ ram_mb: 10_000 }));
      // Nothing was touched: the host's sampled use is what it was.
      const committable = 24_576 - (3_000 + 2 * (10_000 + HYPERVISOR_OVERHEAD_MB)) - 512;
      await expect(admission.spawn(request({ ram_mb: 10_000 }))).rejects.toThrow(
        `ram_mb: 10000 MB does not fit on this node: ${committable} MB committable of 24576 MB (margin 512 MB)`,
      );
      expect(driver.creates).toHaveLength(2);
    });

    it('judges concurrent spawns one after the other, so together they cannot over-commit', async () => {
      const outcomes = await Promise.allSettled(
        [1, 2, 3].map(() => admission.spawn(request({ ram_mb: 10_000 }))),
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
      ({ admission, vms } = await service(1));
      await admission.spawn(request({ vcpu_count: 2 }));
      await expect(admission.spawn(request({ vcpu_count: 1 }))).rejects.toThrow(
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
      const committable = 24_576 - (3_000 + 16_000 + HYPERVISOR_OVERHEAD_MB) - 512;
      await expect(admission.spawn(request({ ram_mb: committable + 1 }))).rejects.toThrow(
        VmDoesNotFitError,
      );
      await admission.spawn(request({ ram_mb: committable }));
    });

    it('refuses a VM beyond the most a heartbeat may report, counting VMs in any state', async () => {
      const ids = Array.from(
        { length: MAX_VMS_PER_HEARTBEAT - 1 },
        (_, index) => `vm-${index.toString(16).padStart(16, '0')}`,
      );
      await Promise.all(ids.map((vmId) => leftBehind(vmId, { ram_alloc_mb: 1, error: 'failed' })));
      const { vm } = await admission.spawn(request());
      expect(vm.state).toBe(VmState.Provisioning);
      const refusal = admission.spawn(request());
      await expect(refusal).rejects.toThrow(
        new VmDoesNotFitError(
          `this node holds ${MAX_VMS_PER_HEARTBEAT} VMs, the most a heartbeat may report (limit ${MAX_VMS_PER_HEARTBEAT}); delete one first`,
        ),
      );
      expect(await runFolders()).toHaveLength(MAX_VMS_PER_HEARTBEAT);
      await vms.destroy(ids[0]);
      expect((await admission.spawn(request())).created).toBe(true);
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
      await admission.spawn(request({ ram_mb: 2_048, vcpu_count: 1 }));
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

  describe('disk room', () => {
    /** What VM_DISK_DIR's file system (the test's /tmp) has free now. */
    async function availableBytes(): Promise<number> {
      const found = await statfs(root);
      return found.bavail * found.bsize;
    }

    it("counts each VM's disk at its virtual size: a second disk of 60% of the room is refused (422), naming disk_gb and the room", async () => {
      driver.imageBytes = Math.floor((await availableBytes()) * 0.6);
      await admission.spawn(request());
      const refusal = admission.spawn(request());
      await expect(refusal).rejects.toThrow(VmDoesNotFitError);
      const error = (await refusal.catch((caught: Error) => caught)) as Error;
      expect(statusOf(error)).toBe(422);
      expect(error.message).toMatch(
        /^disk_gb: [\d.]+ GiB does not fit in this node's disk room: [\d.]+ GiB committable of [\d.]+ GiB room in VM_DISK_DIR \(reserve [\d.]+ GiB, [\d.]+ GiB committed to 1 other VM disk\(s\)\)$/,
      );
      expect(logs).toContain(`warn node node-a refused a VM: ${error.message}`);
      expect(await runFolders()).toHaveLength(1);
    });

    it('admits it with thin provisioning (VM_DISK_OVERCOMMIT 2), and names the ratio past it', async () => {
      ({ admission, vms } = await service(4, 2));
      // Two fit in twice the room, a third does not.
      driver.imageBytes = Math.floor((await availableBytes()) * 0.7);
      await admission.spawn(request());
      await admission.spawn(request());
      await expect(admission.spawn(request())).rejects.toThrow('x VM_DISK_OVERCOMMIT 2 (reserve');
    });

    it("counts a stopped VM's disk too, and its disk_gb when it has one", async () => {
      const gib = 1024 ** 3;
      driver.imageBytes = gib;
      const roomGb = Math.floor((await availableBytes()) / gib);
      await leftBehind('vm-00000000000000a1', { disk_gb: roomGb - 1, error: 'failed' });
      await expect(admission.spawn(request())).rejects.toThrow(/committed to 1 other VM disk/);
    });

    it('makes the disk at disk_gb, kept in the sidecar for every start', async () => {
      driver.imageBytes = 1024 ** 3;
      const { vm } = await admission.spawn(request({ disk_gb: 2 }));
      expect(driver.filesMade.map((spec) => spec.diskGb)).toEqual([2]);
      expect(driver.creates[0].spec.diskGb).toBe(2);
      expect((await files.readSidecar(vm.vm_id))?.disk_gb).toBe(2);
      expect(logs.some((line) => line.includes('96 MB, 1 vCPU, 2 GiB disk'))).toBe(true);
    });

    it('keeps the copy policy of its spawn and reports it with the VM in every heartbeat; none without one', async () => {
      const { vm } = await admission.spawn(request({ copies: { count: 2, every_s: 45 } }));
      expect((await files.readSidecar(vm.vm_id))?.copies).toEqual({ count: 2, every_s: 45 });
      const { vm: plain } = await admission.spawn(request());
      const reported = (await vms.report()).vms;
      expect(reported.find(({ vm_id }) => vm_id === vm.vm_id)?.copies).toEqual({
        count: 2,
        every_s: 45,
      });
      expect(reported.find(({ vm_id }) => vm_id === plain.vm_id)).not.toHaveProperty('copies');
    });

    it("judges no disk when the base image's size cannot be read: making its disk says why, as before", async () => {
      jest
        .spyOn(driver, 'imageDiskBytes')
        .mockRejectedValue(new Error('qemu-img failed: Image is not in qcow2 format'));
      const { vm } = await admission.spawn(request({ disk_gb: 2 }));
      expect(vm.state).toBe(VmState.Provisioning);
      expect(logs).toContain(
        "warn node node-a: the base image's size cannot be read (qemu-img failed: Image is not in qcow2 format); disks not judged against the disk room",
      );
    });

    it("refuses (422) a disk_gb below the base image's size, naming both, making nothing", async () => {
      driver.imageBytes = 4 * 1024 ** 3;
      const refusal = admission.spawn(request({ disk_gb: 2 }));
      await expect(refusal).rejects.toThrow(
        new VmDiskTooSmallError(
          'disk_gb: 2 GiB is smaller than the base image (4.0 GiB); ask for at least 4',
        ),
      );
      expect(statusOf((await refusal.catch((caught: Error) => caught)) as Error)).toBe(422);
      expect(await runFolders()).toEqual([]);
    });
  });

  describe('Idempotency-Key', () => {
    it('answers a retry with the VM the first spawn made, and makes no second one', async () => {
      const first = await admission.spawn(request({ tenant_id: 'acme' }), key('a', 'b'));
      const again = await admission.spawn(request({ tenant_id: 'acme' }), key('a', 'b'));
      expect(first.created).toBe(true);
      expect(again).toEqual({ vm: first.vm, created: false });
      expect(driver.creates).toHaveLength(1);
      expect(await runFolders()).toEqual([first.vm.vm_id]);
    });

    it('makes one VM for concurrent spawns with the same key', async () => {
      const outcomes = await Promise.all(
        [1, 2, 3].map(() => admission.spawn(request(), key('a', 'b'))),
      );
      expect(new Set(outcomes.map(({ vm }) => vm.vm_id)).size).toBe(1);
      expect(outcomes.map(({ created }) => created).sort()).toEqual([false, false, true]);
      expect(driver.filesMade).toHaveLength(1);
      expect(driver.creates).toHaveLength(1);
    });

    it('refuses the same key with another request, naming Idempotency-Key and the VM', async () => {
      const { vm } = await admission.spawn(request(), key('a', 'b'));
      await expect(admission.spawn(request({ ram_mb: 128 }), key('a', 'c'))).rejects.toThrow(
        new IdempotencyKeyReusedError(
          `Idempotency-Key was used for another request (vm ${vm.vm_id}): a retry must repeat the request it was first sent with`,
        ),
      );
      expect(await runFolders()).toEqual([vm.vm_id]);
    });

    it('keeps the key with the VM across an agent restart, for a day', async () => {
      const { vm } = await admission.spawn(request(), key('a', 'b'));
      const { admission: restarted } = await service();
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
      const keyed = await admission.spawn(request(), key('a', 'b'));
      const plain = await admission.spawn(request());
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
      const error = (await admission
        .spawn(request())
        .catch((thrown: unknown) => thrown)) as VmDiskError;
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
      const error = (await admission
        .spawn(request())
        .catch((thrown: unknown) => thrown)) as VmDiskError;
      expect(error.full).toBe(false);
      expect(statusOf(error)).toBe(500);
      expect(error.message).toContain(`VM_DISK_DIR ${root}: permission denied (EACCES)`);
      expect(await runFolders()).toEqual([]);
    });

    it('is refused when the sidecar cannot be written, and when the base image cannot be made', async () => {
      jest
        .spyOn(files, 'writeSidecar')
        .mockRejectedValueOnce(errnoError('ENOSPC', 'ENOSPC: no space left on device, write'));
      await expect(admission.spawn(request())).rejects.toThrow(
        `VM_DISK_DIR ${root}: no space left on device (ENOSPC) while writing the sidecar; nothing of the VM was kept`,
      );
      expect(await runFolders()).toEqual([]);

      driver.planFailure = new Error('qemu-img failed: No space left on device');
      await expect(admission.spawn(request())).rejects.toThrow(
        `VM_DISK_DIR ${root}: no space left on device (ENOSPC) while making the base image; nothing of the VM was kept`,
      );
      expect(await runFolders()).toEqual([]);
    });

    it('still lists a VM whose tool failed for another reason as Error, as before', async () => {
      driver.filesFailure = new VmCreateError('seed ISO', 'genisoimage failed: not installed');
      const { vm, created } = await admission.spawn(request());
      expect(created).toBe(true);
      expect(vm.state).toBe(VmState.Error);
      expect(await vms.list()).toMatchObject([{ vm_id: vm.vm_id, state: VmState.Error }]);
      expect(logs).toContain(
        `error vm ${vm.vm_id} failed at the seed ISO: genisoimage failed: not installed`,
      );
    });
  });
});
