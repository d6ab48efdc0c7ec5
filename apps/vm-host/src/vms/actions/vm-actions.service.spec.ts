import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DesiredVmState, VmOperation, VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeVmDriver, fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import {
  FAKE_STARTED,
  VmBed,
  VmServices,
  closeVmBed,
  openVmBed,
  vmServices,
} from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmFiles } from '../files/vm-files';
import { VmDiskRoom } from '../admission/vm-disk-room';
import { DiskFullPauses } from '../reconciliation/disk-full-pauses';
import {
  VmActionConflictError,
  VmDoesNotFitError,
  VmNotOnNodeError,
  VmPortTakenError,
} from '../vms.errors';

const VM = 'vm-00000000000000a1';
const SSH = [{ host_port: 40022, guest_port: 22, protocol: 'tcp' as const }];

/**
 * Resolves once `ready` holds, looking again after each turn of the event loop (the services'
 * file reads finish in their own time); fails after 10 s of real time.
 */
async function until(ready: () => boolean): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  while (!ready()) {
    if (Date.now() > giveUpAt) throw new Error('never happened');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('VM life cycle: desired state, restarts and actions', () => {
  let bed: VmBed;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let services: VmServices;
  let ramTotalMb: number;

  beforeEach(async () => {
    bed = await openVmBed('vm-actions-');
    ({ files, driver, clock } = bed);
    ramTotalMb = 65_536;
    const hostFacts = fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 });
    hostFacts.capacity = () =>
      Promise.resolve({ ram_total_mb: ramTotalMb, ram_used_mb: 1_024, cpu_cores: 16 });
    const config = vmHostConfig({ VM_NODE_ID: 'node-a', VM_VCPU_OVERCOMMIT: '4' });
    services = await vmServices({ files, driver, clock, hostFacts, config });
  });

  afterEach(() => closeVmBed(bed));

  /** A VM that ran under an earlier agent: started, with an SSH port, its process as `live` says. */
  async function ranBefore(fields: Parameters<VmBed['leftBehind']>[1] = {}): Promise<void> {
    await bed.leftBehind(VM, {
      started_at: '2026-08-06T11:00:01.000Z',
      host_ports: SSH,
      driver: { kind: 'fake', pid: 4242 },
      ...fields,
    });
  }

  function alive(): void {
    driver.live.set(VM, {
      record: { kind: 'fake', pid: 4242 },
      hostPorts: SSH,
      rssMb: 10,
      summary: 'fake pid 4242',
    });
    driver.runState = 'running';
  }

  function killed(): void {
    driver.live.delete(VM);
    driver.runState = 'stopped';
  }

  /** Lets the pending start succeed and waits until the VM is no longer starting. */
  async function startSucceeds(): Promise<void> {
    await until(() => driver.creates.length > 0);
    driver.creates.shift()!.settle(FAKE_STARTED);
    alive();
    await services.lifecycle.started(VM);
  }

  async function startFails(message: string): Promise<void> {
    await until(() => driver.creates.length > 0);
    driver.creates.shift()!.settle(new Error(message));
    await services.lifecycle.started(VM);
  }

  it('starts a VM that should run but has no process at start-up at once, from its disk, keeping its ports', async () => {
    await ranBefore();
    killed();
    await services.reconciliation.recover();
    expect(await services.actions.lifeCycle(VM)).toMatchObject({
      state: VmState.Provisioning,
      desired_state: DesiredVmState.Running,
      operation: VmOperation.Starting,
      restart_count: 0,
    });
    await until(() => driver.creates.length > 0);
    expect(driver.creates[0]).toMatchObject({ spec: { vmId: VM }, keepPorts: SSH });
    await startSucceeds();
    const life = await services.actions.lifeCycle(VM);
    expect(life).toMatchObject({ state: VmState.Running, operation: null, next_start_at: null });
    expect(life.last_exit).toMatch(/^not running when the agent started/);
    expect((await files.readSidecar(VM))?.last_exit).toBe(life.last_exit);
  });

  it('starts the VMs of a node that rebooted two at a time, never all at once', async () => {
    const ids = ['vm-00000000000000b1', 'vm-00000000000000b2', 'vm-00000000000000b3'];
    for (const vmId of ids) {
      await bed.leftBehind(vmId, { started_at: '2026-08-06T11:00:01.000Z', host_ports: SSH });
    }
    driver.runState = 'stopped';
    await services.reconciliation.recover();
    expect(ids.map((vmId) => services.lifecycle.inProgress(vmId))).toEqual([true, true, true]);
    await until(() => driver.creates.length === 2);
    // The third waits for a slot, however long the first two take (the two in either order).
    await services.reconciliation.reconciled();
    expect(driver.creates).toHaveLength(2);
    const first = driver.creates.shift()!;
    const waiting = ids.filter(
      (vmId) => vmId !== first.spec.vmId && vmId !== driver.creates[0].spec.vmId,
    );
    expect(waiting).toHaveLength(1);
    first.settle(FAKE_STARTED);
    await until(() => driver.creates.length === 2);
    expect(driver.creates[1].spec.vmId).toBe(waiting[0]);
    for (const create of driver.creates.splice(0)) create.settle(FAKE_STARTED);
    await Promise.all(ids.map((vmId) => services.lifecycle.started(vmId)));
  });

  it('leaves a VM an operator stopped stopped at start-up', async () => {
    await ranBefore({ desired_state: DesiredVmState.Stopped });
    killed();
    await services.reconciliation.recover();
    expect(services.lifecycle.inProgress(VM)).toBe(false);
    expect(driver.creates).toHaveLength(0);
    expect(await services.actions.lifeCycle(VM)).toMatchObject({
      state: VmState.Stopped,
      desired_state: DesiredVmState.Stopped,
      reason: null,
      next_start_at: null,
    });
  });

  it('restarts a crashed VM only after the backoff, then doubles it; Error after 3 failures in a row, still retried', async () => {
    await ranBefore();
    alive();
    await services.reconciliation.reconciled();
    killed();
    await services.reconciliation.reconciled();
    let life = await services.actions.lifeCycle(VM);
    expect(life).toMatchObject({ state: VmState.Stopped, restart_count: 1 });
    expect(life.next_start_at).toBe(new Date(clock.wallNow() + 5_000).toISOString());
    expect(life.last_exit).toMatch(/process ended at .* while the VM should run/);
    clock.advance(4_999);
    await services.reconciliation.reconciled();
    expect(services.lifecycle.inProgress(VM)).toBe(false);
    clock.advance(1);
    await services.reconciliation.reconciled();
    await startFails('QEMU: could not open disk');
    life = await services.actions.lifeCycle(VM);
    expect(life).toMatchObject({ state: VmState.Stopped, restart_count: 2 });
    expect(life.reason).toContain('could not open disk');
    // 10 s after the second failure, not 5.
    clock.advance(9_999);
    await services.reconciliation.reconciled();
    expect(driver.creates).toHaveLength(0);
    clock.advance(1);
    await services.reconciliation.reconciled();
    await startFails('QEMU: could not open disk');
    life = await services.actions.lifeCycle(VM);
    expect(life.state).toBe(VmState.Error);
    expect(life.reason).toMatch(
      /^failed 3 times in a row; last: start failed at .*could not open disk/,
    );
    expect(life.next_start_at).toBe(new Date(clock.wallNow() + 20_000).toISOString());
    expect(await services.vms.crashLooping()).toBe(1);
    clock.advance(20_000);
    await services.reconciliation.reconciled();
    await startSucceeds();
    expect(await services.actions.lifeCycle(VM)).toMatchObject({
      state: VmState.Running,
      reason: null,
      restart_count: 3,
    });
    // Still counted while it runs again: a VM that boots and crashes is Running part of the time.
    expect(await services.vms.crashLooping()).toBe(1);
    clock.advance(10 * 60_000);
    await services.reconciliation.reconciled();
    expect(await services.vms.crashLooping()).toBe(0);
    expect((await services.actions.lifeCycle(VM)).restart_count).toBe(0);
  });

  it('starts a VM with published ports again with exactly its own; one taken is Error naming it, until it is free', async () => {
    const forwards = [...SSH, { host_port: 48080, guest_port: 8080, protocol: 'tcp' as const }];
    await ranBefore({ forwards, host_ports: forwards });
    killed();
    await services.reconciliation.recover();
    await until(() => driver.creates.length > 0);
    expect(driver.creates[0].spec.forwards).toEqual(forwards);
    driver.creates.shift()!.settle(new VmPortTakenError(forwards[1], '127.0.0.1'));
    await services.lifecycle.started(VM);
    const life = await services.actions.lifeCycle(VM);
    expect(life.state).toBe(VmState.Error);
    expect(life.reason).toBe(
      'start failed at ports: host port 48080/tcp on 127.0.0.1 (forwarded to guest port 8080) is taken by another process; the VM keeps its ports, so it starts once that port is free again',
    );
    expect((await files.readSidecar(VM))?.forwards).toEqual(forwards);
    clock.advance(5_000);
    await services.reconciliation.reconciled();
    await until(() => driver.creates.length > 0);
    expect(driver.creates[0].spec.forwards).toEqual(forwards);
    driver.creates.shift()!.settle({ ...FAKE_STARTED, hostPorts: forwards });
    alive();
    await services.lifecycle.started(VM);
    expect(await services.actions.lifeCycle(VM)).toMatchObject({ state: VmState.Running });
    expect((await services.vms.list())[0].host_ports).toEqual(forwards);
  });

  it('refuses to start a VM again when the node has no room left, and retries it at the backoff pace', async () => {
    await ranBefore({ ram_alloc_mb: 8_192 });
    killed();
    ramTotalMb = 4_096;
    await services.reconciliation.recover();
    await until(() => !services.lifecycle.inProgress(VM));
    const life = await services.actions.lifeCycle(VM);
    expect(driver.creates).toHaveLength(0);
    expect(life.reason).toMatch(/^start failed at admission: ram_mb: 8192 MB does not fit/);
    expect(life.next_start_at).not.toBeNull();
  });

  it('stops a running VM: ACPI first, the desired state written, Stopped and kept stopped', async () => {
    await ranBefore();
    alive();
    let guestDown!: () => void;
    driver.powerDownGate = new Promise((resolve) => (guestDown = resolve));
    const asked = await services.actions.stop(VM, { force: false, timeout_s: 60 });
    expect(asked).toMatchObject({
      state: VmState.Running,
      desired_state: DesiredVmState.Stopped,
      operation: VmOperation.Stopping,
    });
    guestDown();
    await until(() => services.lifecycle.operationOf(VM) === null);
    driver.runState = 'stopped';
    expect(driver.poweredDown).toEqual([VM]);
    expect(driver.stopped).toEqual([]);
    expect((await files.readSidecar(VM))?.desired_state).toBe(DesiredVmState.Stopped);
    await services.reconciliation.reconciled();
    expect(driver.creates).toHaveLength(0);
    expect(await services.actions.lifeCycle(VM)).toMatchObject({ state: VmState.Stopped });
    await expect(services.actions.stop(VM, { force: false, timeout_s: 60 })).rejects.toEqual(
      VmActionConflictError.alreadyStopped(VM),
    );
  });

  it('ends a guest that does not power down within the timeout, and at once when forced', async () => {
    await ranBefore();
    alive();
    driver.powersDown = false;
    await services.actions.stop(VM, { force: false, timeout_s: 1 });
    await until(() => services.lifecycle.operationOf(VM) === null);
    expect(driver.poweredDown).toEqual([VM]);
    expect(driver.stopped.map(({ vmId }) => vmId)).toEqual([VM]);
    expect(bed.logs).toContain(`warn vm ${VM} did not power down within 1 s; ending its process`);
    alive();
    await services.actions.stop(VM, { force: true, timeout_s: 60 });
    await until(() => services.lifecycle.operationOf(VM) === null);
    expect(driver.poweredDown).toEqual([VM]);
    expect(driver.stopped).toHaveLength(2);
  });

  it('starts a stopped VM from its disk, and refuses with the reason when there is no room', async () => {
    await ranBefore({ desired_state: DesiredVmState.Stopped, ram_alloc_mb: 8_192 });
    killed();
    ramTotalMb = 4_096;
    await expect(services.actions.start(VM)).rejects.toThrow(VmDoesNotFitError);
    expect((await files.readSidecar(VM))?.desired_state).toBe(DesiredVmState.Stopped);
    expect(driver.creates).toHaveLength(0);
    ramTotalMb = 65_536;
    expect(await services.actions.start(VM)).toMatchObject({
      state: VmState.Provisioning,
      desired_state: DesiredVmState.Running,
    });
    await startSucceeds();
    expect(await services.actions.lifeCycle(VM)).toMatchObject({ state: VmState.Running });
    await expect(services.actions.start(VM)).rejects.toEqual(
      VmActionConflictError.alreadyRunning(VM),
    );
  });

  it('makes the files of a VM never started before starting it (an earlier agent was killed in its create)', async () => {
    await bed.leftBehind(VM, { error: 'agent stopped before the VM was started' });
    expect(await services.actions.start(VM)).toMatchObject({ state: VmState.Provisioning });
    await until(() => driver.creates.length === 1);
    expect(driver.filesMade).toEqual([expect.objectContaining({ vmId: VM, ramMb: 1_024 })]);
    await startSucceeds();
    expect(await services.actions.lifeCycle(VM)).toMatchObject({
      state: VmState.Running,
      reason: null,
    });
    // A VM that ran keeps its disk: nothing is made again.
    await services.actions.stop(VM, { force: true, timeout_s: 1 });
    await until(() => services.lifecycle.operationOf(VM) === null);
    killed();
    await services.actions.start(VM);
    await startSucceeds();
    expect(driver.filesMade).toHaveLength(1);
  });

  it('restarts a running VM in a new process; forced, resets it in place', async () => {
    await ranBefore();
    alive();
    await services.actions.restart(VM, { force: false, timeout_s: 60 });
    await startSucceeds();
    await until(() => services.lifecycle.operationOf(VM) === null);
    expect(driver.poweredDown).toEqual([VM]);
    expect(await services.actions.lifeCycle(VM)).toMatchObject({
      state: VmState.Running,
      restart_count: 0,
    });
    await services.actions.restart(VM, { force: true, timeout_s: 60 });
    await until(() => services.lifecycle.operationOf(VM) === null);
    expect(driver.resets).toEqual([VM]);
    expect(driver.creates).toHaveLength(0);
  });

  describe('a VM its hypervisor paused on a full disk (io-error)', () => {
    let diskRoom: VmDiskRoom;
    let pauses: DiskFullPauses;
    let room: boolean;

    beforeEach(async () => {
      const config = vmHostConfig({ VM_NODE_ID: 'node-a' });
      diskRoom = new VmDiskRoom(files, driver, config);
      room = false;
      // VM_DISK_DIR full or not, as the test says (the real one is the test's /tmp).
      jest
        .spyOn(VmDiskRoom.prototype, 'hasRoomAgain')
        .mockImplementation(() => Promise.resolve(room));
      pauses = new DiskFullPauses(services.lifecycle, driver, diskRoom, config);
      await ranBefore();
      alive();
      driver.runState = 'io-error';
    });

    afterEach(() => jest.restoreAllMocks());

    it('is listed Error with the reason, not Stopped, and resumed once there is room, without an operator', async () => {
      expect(await services.actions.lifeCycle(VM)).toMatchObject({
        state: VmState.Error,
        desired_state: DesiredVmState.Running,
        reason: expect.stringMatching(/^paused: disk full on node-a /) as unknown,
      });
      expect(await services.vms.pausedOnFullDisk()).toBe(1);
      await pauses.resumeWhereRoom(await services.sidecars.all());
      expect(driver.resumed).toEqual([]);
      room = true;
      await pauses.resumeWhereRoom(await services.sidecars.all());
      expect(driver.resumed).toEqual([VM]);
      expect(await services.actions.lifeCycle(VM)).toMatchObject({
        state: VmState.Running,
        reason: null,
      });
      expect(await services.vms.pausedOnFullDisk()).toBe(0);
    });

    it('is resumed by a start once there is room (never "already running"), refused (422) while full', async () => {
      await services.actions.lifeCycle(VM);
      const refusal = services.actions.start(VM);
      await expect(refusal).rejects.toThrow(VmDoesNotFitError);
      await expect(refusal).rejects.toThrow(
        `vm ${VM} is paused: VM_DISK_DIR on node node-a is full`,
      );
      expect(driver.resumed).toEqual([]);
      room = true;
      expect(await services.actions.start(VM)).toMatchObject({ state: VmState.Running });
      expect(driver.resumed).toEqual([VM]);
    });

    it('is stopped by ending its process at once, and listed Stopped', async () => {
      await services.actions.stop(VM, { force: false, timeout_s: 60 });
      await until(() => services.lifecycle.operationOf(VM) === null);
      expect(driver.poweredDown).toEqual([]);
      expect(driver.stopped.map(({ vmId }) => vmId)).toEqual([VM]);
      driver.runState = 'stopped';
      expect(await services.actions.lifeCycle(VM)).toMatchObject({
        state: VmState.Stopped,
        desired_state: DesiredVmState.Stopped,
      });
      expect(await services.vms.pausedOnFullDisk()).toBe(0);
    });

    it('is restarted by ending its process at once (no power button it could hear), then started from its disk', async () => {
      await services.actions.restart(VM, { force: false, timeout_s: 60 });
      await startSucceeds();
      await until(() => services.lifecycle.operationOf(VM) === null);
      expect(driver.poweredDown).toEqual([]);
      expect(driver.stopped.map(({ vmId }) => vmId)).toEqual([VM]);
      expect(await services.actions.lifeCycle(VM)).toMatchObject({ state: VmState.Running });
    });
  });

  it("keeps in vm.json the accelerator fallback of the VM's last start only", async () => {
    const fellBack = (cpu: string): string =>
      `QEMU: stopped under KVM (CPU ${cpu}) with QMP status internal-error; started under TCG`;
    await ranBefore({ desired_state: DesiredVmState.Stopped, accel_fallback: fellBack('host') });
    killed();
    await services.actions.start(VM);
    await until(() => driver.creates.length > 0);
    driver.creates.shift()!.settle({ ...FAKE_STARTED, accelFallback: fellBack('qemu64') });
    alive();
    await services.lifecycle.started(VM);
    expect((await files.readSidecar(VM))?.accel_fallback).toBe(fellBack('qemu64'));

    // Started again under KVM without a fallback: nothing of the earlier start's is left.
    await services.actions.restart(VM, { force: false, timeout_s: 60 });
    await startSucceeds();
    await until(() => services.lifecycle.operationOf(VM) === null);
    const sidecar = await files.readSidecar(VM);
    expect(sidecar).toMatchObject({ error: null, driver: FAKE_STARTED.record });
    expect(sidecar).not.toHaveProperty('accel_fallback');
  });

  it('refuses actions on a VM being created, another action, or no VM at all', async () => {
    const { vm } = await services.vms.spawn({
      vm_type: 'web',
      ram_mb: 96,
      vcpu_count: 1,
      prefer_kvm: false,
    });
    await expect(services.actions.stop(vm.vm_id, { force: true, timeout_s: 60 })).rejects.toEqual(
      VmActionConflictError.beingCreated(vm.vm_id),
    );
    await expect(services.actions.start('vm-ffffffffffffffff')).rejects.toThrow(VmNotOnNodeError);
    await ranBefore();
    alive();
    let guestDown!: () => void;
    driver.powerDownGate = new Promise((resolve) => (guestDown = resolve));
    await services.actions.stop(VM, { force: false, timeout_s: 1 });
    await expect(services.actions.restart(VM, { force: false, timeout_s: 60 })).rejects.toEqual(
      VmActionConflictError.busy(VM, 'stopping'),
    );
    guestDown();
    await until(() => services.lifecycle.operationOf(VM) === null);
  });

  it('reads the console as printable text, from where a follower left off, and from the start of a new boot', async () => {
    await ranBefore();
    driver.consoleFile = join(bed.root, 'serial.log');
    await writeFile(driver.consoleFile, 'Booting\r\n\x1b[1;32mOK\x1b[0m login:\x07\n');
    const first = await services.actions.console(VM, {});
    expect(first).toEqual({
      vm_id: VM,
      from: 0,
      next: 31,
      text: 'Booting\nOK login:\n',
      reset: false,
    });
    await writeFile(driver.consoleFile, 'Booting\r\n\x1b[1;32mOK\x1b[0m login:\x07\nmore\n');
    expect(await services.actions.console(VM, { from: first.next })).toMatchObject({
      from: 31,
      next: 36,
      text: 'more\n',
    });
    expect(await services.actions.console(VM, { max_bytes: 5 })).toMatchObject({
      from: 31,
      text: 'more\n',
    });
    await writeFile(driver.consoleFile, 'new boot\n');
    expect(await services.actions.console(VM, { from: 36 })).toMatchObject({
      from: 0,
      text: 'new boot\n',
      reset: true,
    });
  });
});
