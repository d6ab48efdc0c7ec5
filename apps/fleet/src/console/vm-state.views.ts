import {
  DesiredVmState,
  FleetVmWithLifeCycle,
  VmLifeCycle,
  VmOperation,
  VmState,
} from '@app/fleet-domain';

/** What a VM's action buttons do. */
export type VmAction = 'stop' | 'force stop' | 'start' | 'restart' | 'delete' | 'forget';

/**
 * The actions that make sense for the VM as it is, as the CLI's agent would answer them: a
 * silent node's VM can only be forgotten; while an operation is under way (stopping, starting,
 * restarting) nothing but a force stop and a delete, so clicks do not pile up operations; a
 * running VM stops and restarts, a stopped one starts, one in Error starts again or is ended;
 * one being created waits. Delete is always there for a live node's VM.
 */
export function actionsFor(vm: FleetVmWithLifeCycle): VmAction[] {
  if (vm.node_silent_since !== undefined) return ['forget'];
  const lifeCycle = vm.life_cycle;
  const state = lifeCycle?.state ?? vm.state;
  if (lifeCycle?.operation) return ['force stop', 'delete'];
  switch (state) {
    case VmState.Running:
      return ['stop', 'force stop', 'restart', 'delete'];
    case VmState.Stopped:
      return ['start', 'delete'];
    case VmState.Error:
      return ['start', 'force stop', 'delete'];
    default:
      return ['delete'];
  }
}

/** Whether the VM's guest can answer on its ports: Running, on a live node, nothing under way. */
export function canAnswer(vm: FleetVmWithLifeCycle): boolean {
  if (vm.node_silent_since !== undefined) return false;
  const lifeCycle = vm.life_cycle;
  return (
    (lifeCycle?.state ?? vm.state) === VmState.Running &&
    lifeCycle?.operation !== VmOperation.Stopping
  );
}

/**
 * What happened to the VM last, in a sentence, as `ppn-fleet vms` says it: an operation under
 * way, a restart waiting out its backoff, an Error's reason, a state other than the one asked
 * for; then failures (crashes, failed starts) only while they count (restart_count above 0):
 * an operator's stop and start clear them, so a power cut before a clean stop and start is
 * not named as the last thing that happened.
 */
export function lifeCycleSummary(vm: FleetVmWithLifeCycle, nowMs: number): string {
  const lifeCycle = vm.life_cycle;
  if (lifeCycle === null || lifeCycle === undefined) {
    return vm.node_silent_since === undefined
      ? `${vm.state} (its agent did not say more)`
      : `${vm.state} when its node was last heard from`;
  }
  const { state } = lifeCycle;
  if (state === VmState.Error)
    return lifeCycle.reason === null ? 'Error' : `Error: ${lifeCycle.reason}`;
  return `${stateWithDesired(lifeCycle, nowMs)}${failuresOf(lifeCycle)}`;
}

function stateWithDesired(lifeCycle: VmLifeCycle, nowMs: number): string {
  const { state } = lifeCycle;
  if (lifeCycle.operation !== null) return `${state}, ${lifeCycle.operation}`;
  if (lifeCycle.next_start_at !== null) {
    const at = Date.parse(lifeCycle.next_start_at);
    const inS = Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
    return `${state}, restarting${inS === undefined ? '' : ` in ${inS} s`}`;
  }
  if (lifeCycle.desired_state === DesiredVmState.Stopped && state === VmState.Running)
    return `${state}, to be stopped`;
  if (lifeCycle.desired_state === DesiredVmState.Stopped && state === VmState.Stopped)
    return 'Stopped as asked';
  if (lifeCycle.desired_state === DesiredVmState.Running && state === VmState.Stopped)
    return `${state}, to be started`;
  if (lifeCycle.desired_state === DesiredVmState.Running && state === VmState.Running)
    return 'Running as asked';
  return state;
}

function failuresOf(lifeCycle: VmLifeCycle): string {
  const count = lifeCycle.restart_count;
  if (count === 0) return '';
  const exit = lifeCycle.last_exit === null ? '' : `, last exit: ${lifeCycle.last_exit}`;
  return `; ${count} failure${count === 1 ? '' : 's'} in a row${exit}`;
}

/** The last exit while it counts (see lifeCycleSummary); none once an operator stopped and started it. */
export function lastFailure(vm: FleetVmWithLifeCycle): string | undefined {
  const lifeCycle = vm.life_cycle;
  if (!lifeCycle || lifeCycle.restart_count === 0) return undefined;
  return lifeCycle.last_exit ?? undefined;
}
