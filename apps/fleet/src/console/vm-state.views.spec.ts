import { DesiredVmState, FleetVmWithLifeCycle, VmLifeCycle, VmState } from '@app/fleet-domain';
import { sshLine } from './vm-table.views';
import { vmLive } from './vm-page.views';
import { actionsFor, canAnswer, lifeCycleSummary } from './vm-state.views';

const NOW = Date.parse('2026-08-06T12:00:00.000Z');

function lifeCycle(overrides: Partial<VmLifeCycle> = {}): VmLifeCycle {
  return {
    vm_id: 'vm-1',
    state: VmState.Running,
    desired_state: 'running',
    operation: null,
    restart_count: 0,
    last_exit: null,
    reason: null,
    next_start_at: null,
    ...overrides,
  } as VmLifeCycle;
}

function vm(
  life: Partial<VmLifeCycle> | null,
  overrides: Partial<FleetVmWithLifeCycle> = {},
): FleetVmWithLifeCycle {
  const cycle = life === null ? null : lifeCycle(life);
  return {
    vm_id: 'vm-1',
    vm_type: 'web',
    state: cycle?.state ?? VmState.Running,
    ram_alloc_mb: 1024,
    vcpu_count: 2,
    started_at: null,
    tenant_id: 'acme',
    host_ports: [{ host_port: 22022, guest_port: 22, protocol: 'tcp' }],
    node_id: 'n1',
    life_cycle: cycle,
    ...overrides,
  };
}

describe("a VM's state on the console", () => {
  it('offers the buttons its state allows: no Start on a running VM, no Stop on a stopped one', () => {
    expect(actionsFor(vm({}))).toEqual(['stop', 'force stop', 'restart', 'delete']);
    expect(
      actionsFor(vm({ state: VmState.Stopped, desired_state: DesiredVmState.Stopped })),
    ).toEqual(['start', 'delete']);
    expect(actionsFor(vm({ state: VmState.Error }))).toEqual(['start', 'force stop', 'delete']);
    expect(actionsFor(vm({ state: VmState.Provisioning }))).toEqual(['delete']);
    expect(actionsFor(vm({}, { node_silent_since: '2026-08-06T11:00:00.000Z' }))).toEqual([
      'forget',
    ]);
  });

  it('offers no second operation while one is under way', () => {
    expect(actionsFor(vm({ operation: 'stopping' } as Partial<VmLifeCycle>))).toEqual([
      'force stop',
      'delete',
    ]);
    expect(
      actionsFor(vm({ operation: 'starting', state: VmState.Stopped } as Partial<VmLifeCycle>)),
    ).toEqual(['force stop', 'delete']);
  });

  it('gives an ssh line only to a VM that can answer', () => {
    expect(sshLine(vm({}), '10.8.0.11')).toBe('ssh -p 22022 debian@10.8.0.11');
    for (const state of [VmState.Stopped, VmState.Error, VmState.Provisioning]) {
      expect(sshLine(vm({ state }), '10.8.0.11')).toBeUndefined();
    }
    expect(canAnswer(vm({ operation: 'stopping' } as Partial<VmLifeCycle>))).toBe(false);
    // Without a life cycle (its agent slow to answer), the listed state decides.
    expect(canAnswer(vm(null))).toBe(true);
    expect(canAnswer(vm(null, { state: VmState.Stopped }))).toBe(false);
  });

  it('says what happened last: a power cut is not named after a clean stop and start', () => {
    const crashed = vm({
      restart_count: 1,
      last_exit: 'QEMU process 4242 ended while the VM should run',
      next_start_at: '2026-08-06T12:00:05.000Z',
      state: VmState.Stopped,
    });
    expect(lifeCycleSummary(crashed, NOW)).toBe(
      'Stopped, restarting in 5 s; 1 failure in a row, last exit: QEMU process 4242 ended while the VM should run',
    );
    // An operator's stop then start: restart_count back to 0, the old exit kept by the agent.
    const restarted = vm({
      restart_count: 0,
      last_exit: 'QEMU process 4242 ended while the VM should run',
    });
    expect(lifeCycleSummary(restarted, NOW)).toBe('Running as asked');
    const live = vmLive(restarted, [], NOW).text;
    expect(live).not.toContain('QEMU process 4242');
    expect(live).toContain('Running as asked');
    expect(
      lifeCycleSummary(vm({ state: VmState.Stopped, desired_state: DesiredVmState.Stopped }), NOW),
    ).toBe('Stopped as asked');
    expect(lifeCycleSummary(vm({ operation: 'stopping' } as Partial<VmLifeCycle>), NOW)).toBe(
      'Running, stopping',
    );
    expect(lifeCycleSummary(vm({ state: VmState.Error, reason: 'crashed 3 times' }), NOW)).toBe(
      'Error: crashed 3 times',
    );
  });
});
