/** The Redis keys of the fleet state and the limits of the scripts that change them. */
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';

export const PREFIX = 'ppn-fleet:';
/** Sorted set of node ids by receive time: what is live, and what the sweep drops. */
export const INDEX = `${PREFIX}nodes`;
/** One counter for every write: a record's version, so no change is ever applied twice. */
export const VERSIONS = `${PREFIX}version`;
/** Sorted set of the ids of nodes holding RAM, by their earliest hold deadline: what the sweep ends. */
export const HOLD_DEADLINES = `${PREFIX}hold-deadlines`;
/**
 * Sorted set of the ids of nodes dropped out while listing VMs, by their last receive time:
 * their keys are kept, with no expiry, for those VMs (see keepsVmsWhenSilent).
 */
export const SILENT = `${PREFIX}silent-nodes`;
/**
 * Hash of VM id → the ids of the nodes holding it (heldVmIds), space-separated (node ids have
 * no space), first holder first (those a making-whole added: in listAll's order): what
 * ownersOf reads instead of every node. Every script that changes what a node holds changes
 * it in the same script, so every controller on this Redis reads the same. An entry can only
 * be left stale (a node key that expired with no sweep, a write by a controller of an earlier
 * version): ownersOf checks each holder against its state. Besides the VM ids, it holds
 * WHOLE_FIELD (and INDEXING_FIELD while being made whole).
 */
export const VM_HOLDERS = `${PREFIX}vm-holders`;
/** Counts the writes (PUT) that kept VM_HOLDERS, as VERSIONS counts every write. */
export const INDEXED_WRITES = `${PREFIX}vm-holders:writes`;
/**
 * The field of VM_HOLDERS (no VM id has a space, see ID_PATTERN) holding VERSIONS -
 * INDEXED_WRITES as it was when VM_HOLDERS was last made whole from every record. Inside the
 * hash, so it goes with it: a VM_HOLDERS deleted or evicted (or never written: a store the
 * version before the index wrote, upgraded in place) has none, and the first lookup makes it
 * whole from the records (once, in batches) and sets it. While VERSIONS - INDEXED_WRITES still
 * equals it, every write since kept VM_HOLDERS; once it is larger, a controller of an earlier
 * version sharing this Redis wrote without it: until VM_HOLDERS is made whole again (at most
 * every INDEX_INTERVAL_MS), ownersOf reads every node, as that version did, so it never misses
 * an owner.
 */
export const WHOLE_FIELD = 'index whole at unindexed writes';
/**
 * The field of VM_HOLDERS naming the making-whole under way: WHOLE_FIELD is set only if it is
 * still there at the end, so a VM_HOLDERS deleted halfway (its first batches gone) is not
 * marked whole.
 */
export const INDEXING_FIELD = 'index being made whole by';
export const nodeKey = (nodeId: string) => `${PREFIX}node:${nodeId}`;
/**
 * A node key outlives any live node, so keys nobody sweeps (every controller down) vanish;
 * but only those of nodes listing no VM. A node listing VMs is kept with no expiry (the live
 * index filters by receive time): with every controller down past it (an upgrade's restart)
 * its VMs would otherwise vanish, not become a silent node's at the next sweep.
 */
export const NODE_KEY_TTL_MS = 2 * NODE_STALE_AFTER_MS;
export const SWEEP_BATCH = 5_000;
/**
 * Silent nodes forgotten per script, and the bytes of their values read, after which a script
 * stops: each is decoded in the script (up to 1 MiB), a fleet-wide drop leaves tens of
 * thousands, and Redis serves nothing else while a script runs.
 */
export const FORGET_BATCH = 500;
export const FORGET_BATCH_BYTES = 8 * 1024 * 1024;
export const WRITE_ATTEMPTS = 20;
/** Bytes of holders' states one lookup script reads (and decodes) before it stops. */
export const OWNERS_BATCH_BYTES = 4 * 1024 * 1024;
/** (VM id, node id) pairs per script while VM_HOLDERS is made whole. */
export const INDEX_BATCH = 2_000;
/** At most one making-whole of VM_HOLDERS this often: each reads every node. */
export const INDEX_INTERVAL_MS = 30_000;
/** At most one line this often about unreadable keys: every listing meets them again. */
export const UNREADABLE_LOG_INTERVAL_MS = 60_000;
