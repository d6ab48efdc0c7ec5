import { DRAIN_OUTCOMES, DrainedVm, MOVE_MODES } from '@app/fleet-domain';

/** A drained node: since when (the controller's wall clock, ms), and what its drain did so far. */
export interface NodeDrainRecord {
  sinceWallMs: number;
  vms: DrainedVm[];
}

/** Outcomes kept per drain: a node lists at most this many VMs (MAX_VMS_PER_NODE and more). */
export const DRAIN_OUTCOMES_KEPT = 4096;

/**
 * The drained nodes (`ppn-fleet node drain`): placement passes them over until undrained. Kept
 * in the same store as the nodes (memory, Redis, etcd), under keys of their own, so a restarted
 * controller and every controller on the store agree; the :9203 node records do not carry it.
 * The flag and the outcomes are two keys: an outcome written after an undrain is ignored (it
 * reads only beside the flag) and cleared by the next drain.
 */
export abstract class NodeDrains {
  /** Marks the node drained (a drained one keeps its `since`); answers its record. */
  abstract drain(nodeId: string, sinceWallMs: number): Promise<NodeDrainRecord>;

  /** Ends the node's drain; whether it was drained. */
  abstract undrain(nodeId: string): Promise<boolean>;

  /** The node's drain; undefined when it is not drained. */
  abstract find(nodeId: string): Promise<NodeDrainRecord | undefined>;

  /** Every drained node, with since when (outcomes not read). */
  abstract drainedSince(): Promise<Map<string, number>>;

  /** The drain's outcomes so far, replacing those kept. */
  abstract recordOutcomes(nodeId: string, vms: readonly DrainedVm[]): Promise<void>;
}

export function encodeSince(sinceWallMs: number): string {
  return String(Math.floor(sinceWallMs));
}

export function decodeSince(text: string | null | undefined): number | undefined {
  return /^[0-9]{1,16}$/.test(text ?? '') ? Number(text) : undefined;
}

export function encodeOutcomes(vms: readonly DrainedVm[]): string {
  return JSON.stringify(vms.slice(-DRAIN_OUTCOMES_KEPT));
}

/** The outcomes as stored; anything that is not one is left out (a store shared, not trusted). */
export function decodeOutcomes(text: string | null | undefined): DrainedVm[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text ?? '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(isDrainedVm).slice(-DRAIN_OUTCOMES_KEPT);
}

function isDrainedVm(value: unknown): value is DrainedVm {
  if (typeof value !== 'object' || value === null) return false;
  const vm = value as Record<string, unknown>;
  const stringOrNull = (field: unknown) => field === null || typeof field === 'string';
  return (
    typeof vm.vm_id === 'string' &&
    (DRAIN_OUTCOMES as readonly unknown[]).includes(vm.outcome) &&
    stringOrNull(vm.to_node_id) &&
    (vm.mode === null || (MOVE_MODES as readonly unknown[]).includes(vm.mode)) &&
    stringOrNull(vm.message) &&
    typeof vm.took_ms === 'number'
  );
}
