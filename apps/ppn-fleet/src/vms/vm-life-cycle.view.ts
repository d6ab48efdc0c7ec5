import type { FleetVm } from '../api/fleet-api.client';
import type { FleetVmWithLifeCycle, VmLifeCycle } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';

/** How often --wait looks at the VM (vm create, stop, start, restart). */
export const WAIT_POLL_MS = 1_000;
/** How long --wait waits by default (vm create, start). */
export const DEFAULT_WAIT_TIMEOUT_S = 300;

/** The actions `ppn-fleet vm` sends to the operations listener and --wait follows. */
export type VmAction = 'stop' | 'start' | 'restart';

/** A VM as `ppn-fleet vms` shows it: from the API, or with its life cycle from the ops listener. */
export type ListedVm = FleetVm | FleetVmWithLifeCycle;

export function lifeCycleOf(vm: ListedVm): VmLifeCycle | undefined {
  return 'life_cycle' in vm && vm.life_cycle !== null ? vm.life_cycle : undefined;
}

/** Whole seconds from `nowMs` to an RFC 3339 time, at least 0; undefined when unreadable. */
function secondsUntil(time: string, nowMs: number): number | undefined {
  const at = Date.parse(time);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** Longest last exit `vms` shows (the agent's own log has it whole). */
const LAST_EXIT_SHOWN = 100;

/**
 * The VM's state, and its desired state where that differs, in a few words: `Running
 * (stopping)` while an operation is under way, `Stopped (restarting in 40 s)` while the agent
 * waits out its backoff, `Error: <reason>` in a crash loop, `Running (to be stopped)` when
 * asked for another state and nothing is under way yet; then, after failures (crashes, failed
 * starts) since it last ran steadily, how many and its last exit. The plain state without a
 * life cycle. Every string from the API made printable.
 */
export function describeVmState(vm: ListedVm, nowMs: number): string {
  const lifeCycle = lifeCycleOf(vm);
  if (lifeCycle === undefined) return printable(vm.state);
  const state = printable(lifeCycle.state);
  // An Error's reason already says how often and why.
  if (lifeCycle.state === 'Error') {
    return lifeCycle.reason === null ? state : `${state}: ${printable(lifeCycle.reason)}`;
  }
  return `${stateWithDesired(lifeCycle, state, nowMs)}${failuresOf(lifeCycle)}`;
}

function stateWithDesired(lifeCycle: VmLifeCycle, state: string, nowMs: number): string {
  if (lifeCycle.operation !== null) return `${state} (${printable(lifeCycle.operation)})`;
  if (lifeCycle.next_start_at !== null) {
    const inS = secondsUntil(lifeCycle.next_start_at, nowMs);
    return `${state} (restarting${inS === undefined ? '' : ` in ${inS} s`})`;
  }
  const running = lifeCycle.state === 'Running';
  if (lifeCycle.desired_state === 'stopped' && running) return `${state} (to be stopped)`;
  if (lifeCycle.desired_state === 'running' && lifeCycle.state === 'Stopped') {
    return `${state} (to be started)`;
  }
  return state;
}

/** `; 2 failures in a row, last exit: ...` after failures, else nothing. */
function failuresOf(lifeCycle: VmLifeCycle): string {
  const count = lifeCycle.restart_count;
  if (count === 0) return '';
  const exit = lifeCycle.last_exit === null ? '' : printable(lifeCycle.last_exit);
  const shown = exit.length > LAST_EXIT_SHOWN ? `${exit.slice(0, LAST_EXIT_SHOWN - 3)}...` : exit;
  return `; ${count} failure${count === 1 ? '' : 's'} in a row${shown ? `, last exit: ${shown}` : ''}`;
}

/**
 * Where `vm <action> --wait` stands with the VM: `done` once it is Stopped (stop) or Running
 * (start, restart) with no operation under way, `failed` once it is in Error with none, and
 * `waiting` otherwise, a VM without a life cycle (its agent silent for now) included.
 */
export function waitOutcome(
  action: VmAction,
  vm: FleetVmWithLifeCycle,
): 'done' | 'failed' | 'waiting' {
  const lifeCycle = vm.life_cycle;
  if (lifeCycle === null || lifeCycle.operation !== null) return 'waiting';
  if (lifeCycle.state === (action === 'stop' ? 'Stopped' : 'Running')) return 'done';
  return lifeCycle.state === 'Error' ? 'failed' : 'waiting';
}
