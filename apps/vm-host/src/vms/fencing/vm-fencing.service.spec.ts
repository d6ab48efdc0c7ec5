import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as prometheus from 'prom-client';
import { VmState } from '@app/fleet-domain';
import { vmHostConfig } from '../../../../../test/support/configs';
import { fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { sampleValue } from '../../../../../test/support/prometheus-text';
import {
  FAKE_STARTED,
  VmBed,
  VmServices,
  closeVmBed,
  openVmBed,
  vmServices,
} from '../../../../../test/support/vm-services';
import { HostMetrics } from '../../metrics/host-metrics.service';
import type { VmSidecar } from '../files/vm-sidecar';
import { VmPhase } from '../life-cycle/vm-transitions';

const PROTECTED = 'vm-00000000000000aa';
const UNPROTECTED = 'vm-00000000000000bb';
/** A VM whose sidecar names no copies policy: the controller's default is its. */
const NO_POLICY = 'vm-00000000000000cc';
const FENCE_AFTER_S = 45;

/** Waits for background work (a start, paced and locked) to reach the driver. */
async function until(ready: () => boolean): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  while (!ready()) {
    if (Date.now() > giveUpAt) throw new Error('never happened');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('VmFencing (self-fencing on the agent)', () => {
  let bed: VmBed;
  let services: VmServices;
  let metrics: HostMetrics;

  async function build(): Promise<VmServices> {
    metrics = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve([]) });
    return vmServices({
      files: bed.files,
      driver: bed.driver,
      clock: bed.clock,
      hostFacts: fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 }),
      config: vmHostConfig({ VM_NODE_ID: 'node-a', VM_DISK_DIR: bed.root }),
      metrics,
    });
  }

  /** A VM that ran and runs now (a live fake process), with its copy policy. */
  async function running(vmId: string, copies: VmSidecar['copies']): Promise<void> {
    await bed.leftBehind(vmId, {
      started_at: '2026-08-06T11:00:00.000Z',
      driver: { kind: 'fake', pid: 1 },
      copies,
    });
    bed.driver.live.set(vmId, {
      record: { kind: 'fake', pid: 1 },
      hostPorts: [],
      rssMb: 40,
      summary: 'fake pid 1',
    });
  }

  async function metric(sample: string): Promise<number | undefined> {
    return sampleValue((await metrics.scrape()).body, sample);
  }

  beforeEach(async () => {
    bed = await openVmBed('vm-fencing-');
    services = await build();
    await running(PROTECTED, { count: 1, every_s: 60 });
    await running(UNPROTECTED, { count: 0, every_s: 60 });
    await services.vms.report();
  });

  afterEach(() => closeVmBed(bed));

  const killed = (): string[] => bed.driver.stopped.map(({ vmId }) => vmId);

  it('changes nothing while answers carry no fence_after_s (memory or Redis mode)', async () => {
    await services.fencing.answered(bed.clock.now(), { superseded_vm_ids: [] });
    bed.clock.advance(3_600_000);
    await services.fencing.check();
    expect(services.fencing.on).toBe(false);
    expect(killed()).toEqual([]);
    await expect(stat(join(bed.root, 'fencing.json'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('ends the protected VM exactly fence_after_s after the renewing heartbeat was SENT, not before; the unprotected one never', async () => {
    const sentAtMs = bed.clock.now();
    // The answer comes 3 s after the send: the lease still runs from the send.
    bed.clock.advance(3_000);
    await services.fencing.answered(sentAtMs, { fence_after_s: FENCE_AFTER_S });
    bed.clock.advance(FENCE_AFTER_S * 1000 - 3_000);
    await services.fencing.check();
    expect(killed()).toEqual([]);
    expect(services.fencing.fencedVmIds()).toEqual([]);

    bed.clock.advance(1);
    await services.fencing.check();
    expect(killed()).toEqual([PROTECTED]);
    expect(services.fencing.fencedVmIds()).toEqual([PROTECTED]);
    expect(services.lifecycle.phaseOf(PROTECTED)).toBe(VmPhase.Fenced);
    expect(bed.driver.live.has(UNPROTECTED)).toBe(true);
    expect(bed.logs).toContain(
      `warn node node-a: lease not renewed for ${FENCE_AFTER_S}s, fenced VM ${PROTECTED} (its process ended hard, its disk kept; started again once a heartbeat renews the lease)`,
    );
    expect(await metric('ppn_vm_host_fences_total')).toBe(1);
    expect(await metric('ppn_vm_host_fenced_vms')).toBe(1);
    // Its disk and desired state kept; listed Stopped with the reason, not a crash to restart.
    const sidecar = await bed.files.readSidecar(PROTECTED);
    expect(sidecar).toMatchObject({ desired_state: 'running' });
    expect(sidecar?.last_exit).toMatch(/^fenced at .*: lease not renewed for 45s$/);
    bed.driver.runState = 'stopped';
    await services.vms.report();
    const cycles = await services.actions.lifeCycles();
    expect(cycles.find((cycle) => cycle.vm_id === PROTECTED)).toMatchObject({
      state: VmState.Stopped,
      desired_state: 'running',
      reason: expect.stringMatching(/^fenced at .*: node node-a's lease not renewed for 45s$/),
    });
    expect(bed.driver.creates).toEqual([]);
    // Fenced once: later looks end nothing more.
    bed.clock.advance(10_000);
    await services.fencing.check();
    expect(killed()).toEqual([PROTECTED]);
  });

  it('measures the lease on the monotonic reading: a wall clock set back an hour does not delay the fence', async () => {
    await services.fencing.answered(services.fencing.now(), { fence_after_s: FENCE_AFTER_S });
    bed.clock.stepWall(-3_600_000);
    bed.clock.advance(FENCE_AFTER_S * 1000 + 1);
    await services.fencing.check();
    expect(killed()).toEqual([PROTECTED]);
  });

  it('refuses an operator start of a fenced VM with a 409 naming the fencing', async () => {
    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    bed.clock.advance(FENCE_AFTER_S * 1000 + 1);
    await services.fencing.check();
    await expect(services.actions.start(PROTECTED)).rejects.toThrow(
      `vm ${PROTECTED} is fenced: its node's lease ran out; it starts again once the node renews it`,
    );
  });

  it('unfences on the next renewing answer, and reconciliation starts the VM again at once', async () => {
    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    bed.clock.advance(FENCE_AFTER_S * 1000 + 1);
    await services.fencing.check();
    expect(killed()).toEqual([PROTECTED]);

    // An answer without the field (etcd failed on the controller) renews nothing.
    await services.fencing.answered(bed.clock.now(), {});
    await services.vms.report();
    expect(bed.driver.creates).toEqual([]);

    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    expect(services.fencing.fencedVmIds()).toEqual([]);
    await services.vms.report();
    await until(() => bed.driver.creates.length > 0);
    expect(bed.driver.creates.map(({ spec }) => spec.vmId)).toEqual([PROTECTED]);
    bed.driver.creates[0].settle(FAKE_STARTED);
    await services.lifecycle.started(PROTECTED);
    expect(await metric('ppn_vm_host_fenced_vms')).toBe(0);
    expect(bed.logs).toContain(
      `log node node-a: lease renewed, VM ${PROTECTED} unfenced; starting it again from its disk`,
    );
  });

  it('counts a start after unfencing as `unfenced`, never as a crash: fenced again and again, it never backs off nor loops', async () => {
    for (let round = 1; round <= 4; round += 1) {
      await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
      bed.clock.advance(FENCE_AFTER_S * 1000 + 1);
      await services.fencing.check();
      expect(killed()).toHaveLength(round);
      await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
      await services.vms.report();
      await until(() => bed.driver.creates.length === round);
      bed.driver.creates[round - 1].settle(FAKE_STARTED);
      await services.lifecycle.started(PROTECTED);
      // Runs again (the fake hypervisor's starts are the test's to record).
      bed.driver.live.set(PROTECTED, {
        record: { kind: 'fake', pid: 1 },
        hostPorts: [],
        rssMb: 40,
        summary: 'fake pid 1',
      });
    }
    expect(await metric('ppn_host_vm_restarts_total{reason="unfenced"}')).toBe(4);
    expect(await metric('ppn_host_vm_restarts_total{reason="crashed"}')).toBeUndefined();
    expect(services.lifecycle.restarts.of(PROTECTED).failures).toBe(0);
    expect(services.lifecycle.restarts.crashLooping(PROTECTED)).toBe(false);
    expect(bed.logs).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^log vm ${PROTECTED} started again from its disk \\(unfenced: its node's lease renewed; last exit: fenced at \\S+: lease not renewed for 45s\\)$`,
        ),
      ),
    );
  });

  it('never starts again a fenced VM the renewing answer supersedes: it is set aside', async () => {
    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    bed.clock.advance(FENCE_AFTER_S * 1000 + 1);
    await services.fencing.check();

    const answer = { fence_after_s: FENCE_AFTER_S, superseded_vm_ids: [PROTECTED] };
    await services.vms.supersede(answer.superseded_vm_ids);
    await services.fencing.answered(bed.clock.now(), answer);
    await services.fencing.check();
    await services.vms.report();
    expect(bed.driver.creates).toEqual([]);
    expect(services.fencing.fencedVmIds()).toEqual([]);
    expect((await services.vms.list()).map((vm) => vm.vm_id)).toEqual([UNPROTECTED]);
  });

  it('remembers the lease: an agent started again holds its protected VMs until a renewing answer', async () => {
    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    const remembered = await stat(join(bed.root, 'fencing.json'));
    expect(remembered.mode & 0o777).toBe(0o600);
    // The node reboots: no VM runs; a new agent starts over the same VM_DISK_DIR.
    bed.driver.live.clear();
    bed.clock.advance(120_000);
    services = await build();
    await services.vms.prepare();
    await services.vms.report();
    await until(() => bed.driver.creates.length > 0);
    expect(bed.driver.creates.map(({ spec }) => spec.vmId)).toEqual([UNPROTECTED]);
    expect(services.fencing.fencedVmIds()).toEqual([PROTECTED]);
    expect(bed.logs).toContain(
      `warn node node-a: lease not renewed for 120s, holding VM ${PROTECTED}: not started until a heartbeat renews it`,
    );

    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    await services.vms.report();
    await until(() => bed.driver.creates.length > 1);
    expect(bed.driver.creates.map(({ spec }) => spec.vmId)).toEqual([UNPROTECTED, PROTECTED]);
  });

  it('ends at start-up a protected VM still running past the remembered lease, and keeps one within it', async () => {
    await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S });
    bed.clock.advance(10_000);
    services = await build();
    await services.vms.prepare();
    expect(killed()).toEqual([]);
    bed.clock.advance(FENCE_AFTER_S * 1000 - 10_000 + 1);
    await services.fencing.check();
    expect(killed()).toEqual([PROTECTED]);
  });

  describe("a VM without a copies policy: protected as the controller's default (copies_default) says", () => {
    beforeEach(async () => {
      await running(NO_POLICY, undefined);
      await services.vms.report();
    });

    async function fencedAfterLapse(answer: { copies_default?: number }): Promise<string[]> {
      await services.fencing.answered(bed.clock.now(), { fence_after_s: FENCE_AFTER_S, ...answer });
      bed.clock.advance(FENCE_AFTER_S * 1000 + 1);
      await services.fencing.check();
      return killed().sort();
    }

    it('is left running when the default keeps no copy (VM_FLEET_COPIES=0: recovery would not restore it)', async () => {
      expect(await fencedAfterLapse({ copies_default: 0 })).toEqual([PROTECTED]);
      expect(bed.driver.live.has(NO_POLICY)).toBe(true);
      expect(services.fencing.fencedVmIds()).toEqual([PROTECTED]);
    });

    it('is fenced when the default keeps one', async () => {
      expect(await fencedAfterLapse({ copies_default: 1 })).toEqual([PROTECTED, NO_POLICY].sort());
    });

    it('is fenced when the controller says no default (one before the field)', async () => {
      expect(await fencedAfterLapse({})).toEqual([PROTECTED, NO_POLICY].sort());
    });

    it('remembers the default: a restarted agent starts it before any answer when the default keeps no copy', async () => {
      await services.fencing.answered(bed.clock.now(), {
        fence_after_s: FENCE_AFTER_S,
        copies_default: 0,
      });
      bed.driver.live.clear();
      bed.clock.advance(120_000);
      services = await build();
      await services.vms.prepare();
      await services.vms.report();
      await until(() => bed.driver.creates.length > 1);
      expect(bed.driver.creates.map(({ spec }) => spec.vmId).sort()).toEqual(
        [UNPROTECTED, NO_POLICY].sort(),
      );
      expect(services.fencing.fencedVmIds()).toEqual([PROTECTED]);
    });
  });
});
