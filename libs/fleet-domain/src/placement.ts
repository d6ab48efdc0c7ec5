import { PLACEMENT_MARGIN_MB } from './fleet.constants';
import { compareIds } from './ids';
import { dispatchTrouble } from './dispatch-health';
import { NodeState, beatIntervalMs, ramAvailableMb } from './node-state';
import { NodeRecord } from './wire/node-record';
import { PublishedPortRequest, portName } from './wire/published-port';

/** A node that has missed this many of its heartbeats in a row is passed over. */
export const MISSED_BEATS_TO_PASS_OVER = 2;

/** Nodes a refusal names one by one; beyond that it says how many more. */
export const NODES_NAMED_PER_REFUSAL = 10;

export interface PlacementRequest {
  ram_mb: number;
  prefer_kvm: boolean;
  preferred_node?: string | null;
  /** Only the host_port of each matters: the node must have it free. */
  ports?: ReadonlyArray<Pick<PublishedPortRequest, 'protocol' | 'host_port'>>;
}

export type PlacementCandidate = Pick<
  NodeRecord,
  'node_id' | 'ram_available_mb' | 'kvm_available' | 'reserved'
> & {
  /** How long the node has been silent (ms); with `beat_interval_ms`, whether it is late. */
  silent_ms?: number;
  /** How often it beats, as observed; null or absent: not known yet. */
  beat_interval_ms?: number | null;
  /** Why its agent is passed over for now (its dispatches fail); absent when it is not. */
  dispatch_trouble?: string;
  /** Why it is passed over whatever its room: drained (`node drain`); absent when it is not. */
  drained?: string;
  /**
   * The host ports its VMs hold as its heartbeats report them (`8080/tcp` → the VM holding
   * it); absent: none known.
   */
  held_ports?: ReadonlyMap<string, string>;
};

export type Placement =
  /**
   * `required_free_mb`: what the node must still have free when the RAM is held for the VM;
   * `passed_over`: why each other node was not chosen, for the log line.
   */
  | { kind: 'placed'; node_id: string; required_free_mb: number; passed_over: string[] }
  /** The preferred node is not listed, late or too small: answered 422, no other node considered. */
  | { kind: 'preferred-node-unfit'; message: string }
  /** No node has room: answered 503, naming every node considered and why it was passed over. */
  | { kind: 'no-capacity'; message: string }
  /**
   * Every node with room holds a host_port the create asks for: answered 422, naming the port
   * and the VM holding it on each node.
   */
  | { kind: 'ports-taken'; message: string };

/** What placement sees of a stored node at `nowMs`: its RAM as held now, and how late it is. */
export function placementCandidate(state: NodeState, nowMs: number): PlacementCandidate {
  const held = heldPorts(state);
  return {
    node_id: state.node_id,
    ram_available_mb: ramAvailableMb(state, nowMs),
    kvm_available: state.kvm_available,
    reserved: state.reserved,
    silent_ms: nowMs - state.received_at_ms,
    beat_interval_ms: beatIntervalMs(state),
    dispatch_trouble: dispatchTrouble(state.dispatch_failures ?? undefined, nowMs),
    ...(held.size > 0 ? { held_ports: held } : {}),
  };
}

/** The host ports the node's VMs hold, as its last heartbeat (and VMs dispatched since) list them. */
function heldPorts(state: Pick<NodeState, 'vms'>): Map<string, string> {
  const held = new Map<string, string>();
  for (const vm of state.vms) {
    for (const port of vm.host_ports ?? []) {
      held.set(portName(port.host_port, port.protocol), vm.vm_id);
    }
  }
  return held;
}

/**
 * Why the node cannot publish a host_port the create asks for (a VM of its own holds it), or
 * undefined when it can (or is not known to hold it: its agent then judges).
 */
function portConflict(node: PlacementCandidate, request: PlacementRequest): string | undefined {
  for (const port of request.ports ?? []) {
    if (port.host_port === undefined || port.host_port === null) continue;
    const name = portName(port.host_port, port.protocol);
    const holder = node.held_ports?.get(name);
    if (holder !== undefined) return `host_port ${name} is held by vm ${holder}`;
  }
  return undefined;
}

/**
 * Advisory placement. With `preferred_node`, that node or nothing. Otherwise the VM needs
 * `ram_mb + 512` free on a node that has not missed two heartbeats in a row; non-reserved
 * nodes are tried first, reserved ones only as a last resort; within a pass a KVM node wins
 * when `prefer_kvm`, then the most free RAM, then the smallest node id so the same fleet
 * always gives the same answer. Whatever the outcome, every other node gets its reason.
 */
export function placeVm(
  request: PlacementRequest,
  candidates: readonly PlacementCandidate[],
): Placement {
  if (request.preferred_node !== undefined && request.preferred_node !== null) {
    return placeOnPreferredNode(request, request.preferred_node, candidates);
  }
  const required = request.ram_mb + PLACEMENT_MARGIN_MB;
  const roomy = candidates.filter(
    (node) => node.ram_available_mb >= required && unfitness(node) === undefined,
  );
  const fitting = roomy.filter((node) => portConflict(node, request) === undefined);
  for (const pass of [false, true]) {
    const inPass = fitting.filter((node) => node.reserved === pass);
    const best = inPass.sort((a, b) => compareCandidates(a, b, request.prefer_kvm))[0];
    if (best) {
      const others = candidates.filter((node) => node !== best);
      return {
        kind: 'placed',
        node_id: best.node_id,
        required_free_mb: required,
        passed_over: byMostRam(others).map(
          (node) =>
            `${node.node_id}: ${portConflict(node, request) ?? whyNotChosen(node, best, required, request.prefer_kvm)}`,
        ),
      };
    }
  }
  if (roomy.length > 0) {
    const reasons = byMostRam(roomy).map(
      (node) => `${node.node_id}: ${portConflict(node, request)}`,
    );
    return {
      kind: 'ports-taken',
      message: `every node with room holds a host_port this create asks for: ${shortened(reasons)}; ask for another host_port, or none (a free one is then chosen)`,
    };
  }
  const needs = `no node has ${required} MB free (ram_mb ${request.ram_mb} + ${PLACEMENT_MARGIN_MB} MB margin)`;
  if (candidates.length === 0) {
    return { kind: 'no-capacity', message: `${needs}; no node is live` };
  }
  const reasons = byMostRam(candidates).map(
    (node) => `${node.node_id}: ${unfitness(node) ?? shortOfRam(node, required)}`,
  );
  return {
    kind: 'no-capacity',
    message: `${needs}; ${candidates.length} live node(s) considered: ${shortened(reasons)}`,
  };
}

/** The first ten reasons, then how many more: a refusal stays readable on a large fleet. */
export function shortened(reasons: readonly string[]): string {
  const named = reasons.slice(0, NODES_NAMED_PER_REFUSAL).join('; ');
  const more = reasons.length - NODES_NAMED_PER_REFUSAL;
  return more > 0 ? `${named}; and ${more} more` : named;
}

function placeOnPreferredNode(
  request: PlacementRequest,
  nodeId: string,
  candidates: readonly PlacementCandidate[],
): Placement {
  const node = candidates.find((candidate) => candidate.node_id === nodeId);
  if (!node) {
    return {
      kind: 'preferred-node-unfit',
      message: `preferred_node ${nodeId} is not enrolled (or silent for more than 30 s)`,
    };
  }
  const unfit = unfitness(node) ?? portConflict(node, request);
  if (unfit !== undefined) {
    return { kind: 'preferred-node-unfit', message: `preferred_node ${nodeId}: ${unfit}` };
  }
  if (node.ram_available_mb < request.ram_mb) {
    return {
      kind: 'preferred-node-unfit',
      message: `preferred_node ${nodeId}: ${shortOfRam(node, request.ram_mb)}`,
    };
  }
  return { kind: 'placed', node_id: nodeId, required_free_mb: request.ram_mb, passed_over: [] };
}

/**
 * Why a node is passed over whatever its RAM: it is drained, late, or its agent cannot be
 * reached.
 */
function unfitness(node: PlacementCandidate): string | undefined {
  return node.drained ?? lateness(node) ?? node.dispatch_trouble;
}

/** A drained node's reason, in placement's refusals and passed-over lists. */
export function drainedReason(sinceIso: string): string {
  return `drained since ${sinceIso} (ppn-fleet node undrain ends it)`;
}

/** Why a node that missed two heartbeats in a row is passed over; undefined when it has not. */
function lateness(node: PlacementCandidate): string | undefined {
  const interval = node.beat_interval_ms;
  if (!interval || node.silent_ms === undefined) return undefined;
  if (node.silent_ms <= MISSED_BEATS_TO_PASS_OVER * interval) return undefined;
  return `missed ${MISSED_BEATS_TO_PASS_OVER} heartbeats (silent ${seconds(node.silent_ms)}, beats every ${seconds(interval)})`;
}

function shortOfRam(node: PlacementCandidate, required: number): string {
  return `needs ${required} MB, has ${node.ram_available_mb} MB`;
}

function whyNotChosen(
  node: PlacementCandidate,
  chosen: PlacementCandidate,
  required: number,
  preferKvm: boolean,
): string {
  const unfit = unfitness(node);
  if (unfit !== undefined) return unfit;
  if (node.ram_available_mb < required) return shortOfRam(node, required);
  if (node.reserved && !chosen.reserved) return 'reserved, used only when no other node fits';
  if (preferKvm && chosen.kvm_available && !node.kvm_available) return 'no KVM';
  return `has ${node.ram_available_mb} MB, ${chosen.node_id} has ${chosen.ram_available_mb} MB`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function byMostRam(nodes: readonly PlacementCandidate[]): PlacementCandidate[] {
  return [...nodes].sort(
    (a, b) => b.ram_available_mb - a.ram_available_mb || compareIds(a.node_id, b.node_id),
  );
}

function compareCandidates(
  a: PlacementCandidate,
  b: PlacementCandidate,
  preferKvm: boolean,
): number {
  if (preferKvm && a.kvm_available !== b.kvm_available) return a.kvm_available ? -1 : 1;
  if (a.ram_available_mb !== b.ram_available_mb) return b.ram_available_mb - a.ram_available_mb;
  return compareIds(a.node_id, b.node_id);
}
