import type { FleetVmWithLifeCycle, VmLifeCycle } from '../api/fleet-ops-api.client';
import { vmLifeCycle } from '../../../../test/factories/vm-life-cycle.factory';
import { describeVmState, waitOutcome } from './vm-life-cycle.view';

const NOW = Date.UTC(2026, 7, 6, 12, 0, 0);

function vmWith(lifeCycle: Partial<VmLifeCycle> | null, state = 'Running'): FleetVmWithLifeCycle {
  return {
    vm_id: 'vm-1',
    vm_type: 'web',
    state: state as FleetVmWithLifeCycle['state'],
    ram_alloc_mb: 512,
    vcpu_count: 1,
    started_at: null,
    tenant_id: null,
    host_ports: [],
    node_id: 'node-a',
    accel: 'tcg',
    life_cycle: lifeCycle === null ? null : { ...vmLifeCycle(), ...lifeCycle },
  };
}

describe("a VM's state with its desired state", () => {
  it.each([
    ['no life cycle: the listed state', vmWith(null, 'Stopped'), 'Stopped'],
    ['as asked', vmWith({}), 'Running'],
    ['an operation under way', vmWith({ operation: 'stopping' }), 'Running (stopping)'],
    [
      'a restart waiting out its backoff',
      vmWith({ state: 'Stopped', next_start_at: '2026-08-06T12:00:39.200Z' }),
      'Stopped (restarting in 40 s)',
    ],
    [
      'a restart already due',
      vmWith({ state: 'Stopped', next_start_at: '2026-08-06T11:59:00.000Z' }),
      'Stopped (restarting in 0 s)',
    ],
    [
      'a crash loop',
      vmWith({ state: 'Error', reason: 'failed 5 times in a row; last: exit 1' }),
      'Error: failed 5 times in a row; last: exit 1',
    ],
    ['to be stopped', vmWith({ desired_state: 'stopped' }), 'Running (to be stopped)'],
    ['to be started', vmWith({ state: 'Stopped' }), 'Stopped (to be started)'],
    ['stopped as asked', vmWith({ state: 'Stopped', desired_state: 'stopped' }), 'Stopped'],
    [
      'a crash restarted, with its last exit',
      vmWith({ restart_count: 1, last_exit: 'its process ended at 2026-08-06T11:59:00.000Z' }),
      'Running; 1 failure in a row, last exit: its process ended at 2026-08-06T11:59:00.000Z',
    ],
    [
      'failures while a restart waits, a long last exit cut',
      vmWith({
        state: 'Stopped',
        next_start_at: '2026-08-06T12:00:10.000Z',
        restart_count: 2,
        last_exit: `x${'y'.repeat(200)}`,
      }),
      `Stopped (restarting in 10 s); 2 failures in a row, last exit: x${'y'.repeat(96)}...`,
    ],
    [
      'control characters',
      vmWith({ state: 'Error', reason: 'bad\u001b[31m\nline' }),
      'Error: bad?[31m?line',
    ],
  ])('%s', (_, vm, text) => {
    expect(describeVmState(vm, NOW)).toBe(text);
  });
});

describe('--wait', () => {
  it.each([
    ['stop', 'Stopped', vmWith({ state: 'Stopped', desired_state: 'stopped' }), 'done'],
    ['stop', 'still stopping', vmWith({ operation: 'stopping' }), 'waiting'],
    ['stop', 'without a life cycle', vmWith(null), 'waiting'],
    ['start', 'Running', vmWith({}), 'done'],
    ['start', 'in Error', vmWith({ state: 'Error' }), 'failed'],
    ['restart', 'still restarting', vmWith({ operation: 'restarting' }), 'waiting'],
    [
      'restart',
      'Stopped, its start due',
      vmWith({ state: 'Stopped', next_start_at: '2026-08-06T12:00:05.000Z' }),
      'waiting',
    ],
    ['restart', 'Running again', vmWith({}), 'done'],
  ] as const)('%s, the VM %s: %s', (action, _, vm, outcome) => {
    expect(waitOutcome(action, vm)).toBe(outcome);
  });
});
