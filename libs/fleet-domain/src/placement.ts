import { PLACEMENT_MARGIN_MB } from './fleet.constants';
import { NodeRecord } from './wire/node-record';

export interface PlacementRequest {
  ram_mb: number;
  prefer_kvm: boolean;
  preferred_node?: string | null;
}

export type PlacementCandidate = Pick<
  NodeRecord,
  'node_id' | 'ram_available_mb' | 'kvm_available' | 'reserved'
>;

export type Placement =
  /** `required_free_mb`: what the node must still have free when the RAM is held for the VM. */
  | { kind: 'placed'; node_id: string; required_free_mb: number }
  /** The preferred node is not listed or too small: answered 422, no other node considered. */
  | { kind: 'preferred-node-unfit'; message: string }
  /** No node has room: answered 503. */
  | { kind: 'no-capacity'; message: string };

/**
 * Advisory placement. With `preferred_node`, that node or nothing. Otherwise the VM needs
 * `ram_mb + 512` free; non-reserved nodes are tried first, reserved ones only as a last
 * resort; within a pass a KVM node wins when `prefer_kvm`, then the most free RAM, then the
 * smallest node id so the same fleet always gives the same answer.
 */
export function placeVm(
  request: PlacementRequest,
  candidates: readonly PlacementCandidate[],
): Placement {
  if (request.preferred_node !== undefined && request.preferred_node !== null) {
    return placeOnPreferredNode(request, request.preferred_node, candidates);
  }
  const required = request.ram_mb + PLACEMENT_MARGIN_MB;
  const fitting = candidates.filter((node) => node.ram_available_mb >= required);
  for (const pass of [false, true]) {
    const inPass = fitting.filter((node) => node.reserved === pass);
    const best = inPass.sort((a, b) => compareCandidates(a, b, request.prefer_kvm))[0];
    if (best) return { kind: 'placed', node_id: best.node_id, required_free_mb: required };
  }
  return {
    kind: 'no-capacity',
    message:
      `no node has ${required} MB free (ram_mb ${request.ram_mb} + ${PLACEMENT_MARGIN_MB} MB margin); ` +
      `${candidates.length} node(s) listed`,
  };
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
  if (node.ram_available_mb < request.ram_mb) {
    return {
      kind: 'preferred-node-unfit',
      message: `preferred_node ${nodeId} has ${node.ram_available_mb} MB available, ram_mb ${request.ram_mb} does not fit`,
    };
  }
  return { kind: 'placed', node_id: nodeId, required_free_mb: request.ram_mb };
}

function compareCandidates(
  a: PlacementCandidate,
  b: PlacementCandidate,
  preferKvm: boolean,
): number {
  if (preferKvm && a.kvm_available !== b.kvm_available) return a.kvm_available ? -1 : 1;
  if (a.ram_available_mb !== b.ram_available_mb) return b.ram_available_mb - a.ram_available_mb;
  return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}
