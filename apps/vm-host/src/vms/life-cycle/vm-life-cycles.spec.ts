import * as prometheus from 'prom-client';
import { firstValueFrom } from 'rxjs';
import { VmOperation, VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeVmDriver } from '../../../../../test/support/fake-vm-driver';
import { sampleValue } from '../../../../../test/support/prometheus-text';
import {
  FAKE_STARTED,
  VmBed,
  closeVmBed,
  createRequest,
  openVmBed,
  roomyVmsService,
} from '../../../../../test/support/vm-services';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { StartedVm } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmCreateError } from '../vms.errors';
import { VmsService } from '../vms.service';
import { vmHostConfig } from '../../../../../test/support/configs';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { VmLifeCycles } from './vm-life-cycles';
import { IllegalVmTransitionError, VmMove, VmPhase, VmTransitionHook } from './vm-transitions';

describe('VmLifeCycles', () => {
  let bed: VmBed;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let clock: FakeClock;
  let vms: VmsService;
  let logs: string[];

  beforeEach(async () => {
    bed = await openVmBed('vm-lifecycle-');
    ({ files, driver, clock, logs } = bed);
    vms = await roomyVmsService(files, driver, clock);
  });

  afterEach(() => closeVmBed(bed));

  /** Settles the create the driver is working on and waits until the service is done with it. */
  async function settleCreate(outcome: StartedVm | Error): Promise<void> {
    const done = firstValueFrom(vms.changes);
    driver.creates.shift()!.settle(outcome);
    await done;
  }

  it('answers Provisioning at once, stays Provisioning while the driver works, then is Running', async () => {
    const { vm: accepted } = await vms.spawn(
      createRequest({ tenant_id: 'acme', prefer_kvm: true }),
    );
    expect(accepted).toEqual({
      vm_id: expect.stringMatching(/^vm-[0-9a-f]{16}$/),
      vm_type: 'web',
      state: VmState.Provisioning,
      ram_alloc_mb: 96,
      vcpu_count: 2,
      started_at: null,
      tenant_id: 'acme',
      host_ports: [],
      accel: null,
    });
    const vmId = accepted.vm_id;
    expect(driver.creates.map(({ spec, record }) => ({ spec, record }))).toEqual([
      {
        spec: {
          vmId,
          vmType: 'web',
          ramMb: 96,
          vcpuCount: 2,
          // SSH alone, on a port free on VM_WG_IP, fixed for the VM's life.
          forwards: [{ host_port: expect.any(Number), guest_port: 22, protocol: 'tcp' }],
        },
        record: { kind: 'fake', fast: true, pid: null },
      },
    ]);
    expect((await vms.list()).map((vm) => vm.state)).toEqual([VmState.Provisioning]);

    clock.advance(1_500);
    await settleCreate(FAKE_STARTED);
    expect(await vms.list()).toEqual([
      {
        ...accepted,
        state: VmState.Running,
        started_at: '2026-08-06T12:00:01.500Z',
        host_ports: FAKE_STARTED.hostPorts,
      },
    ]);
    expect(driver.inspected).toEqual([FAKE_STARTED.record]);
    expect(logs).toEqual([
      `log vm ${vmId} accepted: web, 96 MB, 2 vCPU, fast, tenant acme`,
      `log vm ${vmId} started: fake pid 4242`,
    ]);
  });

  it('reports what the driver sees of a started VM: stopped, or not answering yet', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(createRequest());
    await settleCreate(FAKE_STARTED);
    driver.runState = 'stopped';
    expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Stopped }]);
    driver.runState = 'unknown';
    expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Provisioning }]);
  });

  it('lists a VM whose create step failed as Error, naming the step in the sidecar and the log', async () => {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(createRequest());
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

  describe('KVM present but failing', () => {
    it('keeps in vm.json the fallback a driver made itself (QEMU: KVM failed, TCG runs it)', async () => {
      const {
        vm: { vm_id: vmId },
      } = await vms.spawn(createRequest());
      const reason =
        'QEMU: stopped under KVM (CPU qemu64) with QMP status internal-error; started under TCG';
      await settleCreate({ ...FAKE_STARTED, accelFallback: reason });
      expect(await vms.list()).toMatchObject([{ vm_id: vmId, state: VmState.Running }]);
      expect(await files.readSidecar(vmId)).toMatchObject({ error: null, accel_fallback: reason });
      expect(driver.stopped).toEqual([]);
    });

    it('does not start again after a failed start', async () => {
      await vms.spawn(createRequest({ prefer_kvm: true }));
      await settleCreate(new VmCreateError('QEMU', 'qemu-system-x86_64 failed: no disk'));
      expect(driver.creates).toEqual([]);
      expect(driver.stopped).toEqual([]);
    });
  });

  it('times each VM start from accepted to started, and to failed', async () => {
    const metrics = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve([]) });
    vms = await roomyVmsService(files, driver, clock, metrics);
    for (const outcome of [
      { record: { kind: 'fake' }, hostPorts: [], summary: 'fake pid 1' },
      new Error('qemu exited'),
    ]) {
      await vms.spawn(createRequest());
      await settleCreate(outcome);
    }
    const text = (await metrics.scrape()).body;
    expect(sampleValue(text, 'ppn_host_spawn_duration_seconds_count{outcome="started"}')).toBe(1);
    expect(sampleValue(text, 'ppn_host_spawn_duration_seconds_count{outcome="failed"}')).toBe(1);
  });

  describe('moves through the table', () => {
    function lifecycleHeard(): { lifecycle: VmLifeCycles; moves: VmMove[] } {
      const moves: VmMove[] = [];
      const hook: VmTransitionHook = { name: 'recorder', moved: (move) => void moves.push(move) };
      const config = vmHostConfig({ VM_NODE_ID: 'node-a' });
      const lifecycle = new VmLifeCycles(
        files,
        driver,
        clock,
        new CrashFailpoint(config),
        undefined,
        config,
        [hook],
      );
      return { lifecycle, moves };
    }

    it('refuses a move the table has none for, naming the VM, its phase and the operation', async () => {
      const { lifecycle } = lifecycleHeard();
      await lifecycle.admitting('vm-a', () => {
        expect(lifecycle.phaseOf('vm-a')).toBe(VmPhase.Admitting);
        expect(() => lifecycle.move('vm-a', 'stop')).toThrow(
          new IllegalVmTransitionError('vm-a', VmPhase.Admitting, 'stop'),
        );
        expect(() => lifecycle.crashed('vm-a', 'gone', 0, true)).toThrow(
          'vm vm-a: cannot crash while admitting',
        );
        return Promise.resolve();
      });
      expect(lifecycle.phaseOf('vm-a')).toBe(VmPhase.Idle);
      expect(lifecycle.restarts.of('vm-a').failures).toBe(0);
    });

    it('tells its hooks of every move, and a restart hands its phase to the start', async () => {
      const { lifecycle, moves } = lifecycleHeard();
      let finishStart!: () => void;
      lifecycle.operate('vm-b', VmOperation.Restarting, () => {
        lifecycle.startInBackground('vm-b', () => new Promise<void>((r) => (finishStart = r)));
        return Promise.resolve();
      });
      expect(lifecycle.operationOf('vm-b')).toBe(VmOperation.Starting);
      finishStart();
      await lifecycle.started('vm-b');
      await new Promise<void>((resolve) => setImmediate(resolve));
      await lifecycle.deleting('vm-b', () => Promise.resolve());
      expect(moves.map(({ from, operation, to }) => `${from} -${operation}-> ${to}`)).toEqual([
        'idle -restart-> restarting',
        'restarting -start-> starting',
        'starting -settle-> idle',
        'idle -delete-> deleting',
        'deleting -settle-> idle',
      ]);
      expect(lifecycle.owned('vm-b')).toBe(false);
    });

    it('logs a hook that fails and keeps the move', () => {
      const { lifecycle } = lifecycleHeard();
      const failing = new VmLifeCycles(
        files,
        driver,
        clock,
        new CrashFailpoint(vmHostConfig({})),
        undefined,
        undefined,
        [
          {
            name: 'broken',
            moved: () => {
              throw new Error('no');
            },
          },
        ],
      );
      expect(failing.move('vm-c', 'start')).toBe(VmPhase.Starting);
      expect(failing.owned('vm-c')).toBe(true);
      expect(logs).toContain('error vm vm-c: life-cycle hook broken failed: no');
      expect(lifecycle.owned('vm-c')).toBe(false);
    });
  });
});
