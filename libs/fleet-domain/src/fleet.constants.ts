import type { paths } from './wire/fleet-api.generated';

/** The controller's port. Hardcoded by contract: no flag or variable changes it. */
export const FLEET_PORT = 9203;

/** A node silent for longer than this is dropped from every node listing. */
export const NODE_STALE_AFTER_MS = 30_000;

/**
 * Most nodes the controller keeps after they dropped out while listing VMs (see
 * keepsVmsWhenSilent), each with at most MAX_VMS_PER_HEARTBEAT VMs; beyond, the longest silent
 * is forgotten first, with a warning.
 */
export const SILENT_NODES_KEPT = 1_000;

/**
 * Most nodes the controller's per-node metrics (ppn_fleet_node_*) show, so a fleet, or a flood of
 * made-up node ids, cannot grow a scrape without bound: those first by node id, a set that does
 * not change from scrape to scrape. ppn_fleet_nodes counts them all, and
 * ppn_fleet_nodes_not_exported those left out.
 */
export const MAX_EXPORTED_NODES = 1_000;

/** How often the controller sweeps stale nodes out of its store. */
export const STALENESS_SWEEP_INTERVAL_MS = 1_000;

/** Headroom placement keeps free on a node beyond the VM's own RAM (not applied to `preferred_node`). */
export const PLACEMENT_MARGIN_MB = 512;

/** The route every agent posts its heartbeats to. */
export const HEARTBEAT_PATH = '/v1/nodes/heartbeat' satisfies keyof paths;

/** Agent defaults, as documented in the enrollment how-to. */
export const DEFAULT_HEARTBEAT_INTERVAL_S = 10;
export const DEFAULT_SPAWN_PORT = 9204;
export const DEFAULT_RESERVED = false;
export const DEFAULT_DISK_DIR = '/var/lib/vm-fleet';

/** How long the controller waits for an agent to answer a spawn or destroy call. */
export const AGENT_REQUEST_TIMEOUT_MS = 10_000;

/**
 * How long the controller waits for the TCP connection to an agent, within the request's
 * timeout: an agent that cannot even be connected to in this time (its port silently dropped
 * by a firewall, its host gone) never saw the request, so another node may be asked.
 */
export const AGENT_CONNECT_TIMEOUT_MS = 2_500;

/**
 * How far behind the controller's an agent's clock may be: a spawn carries a deadline (the
 * controller's clock, the end of its wait), which the agent judges by its own clock, so a
 * keyed create's dispatch the agent never answered stays unresolved this long past it.
 */
export const SPAWN_DEADLINE_SKEW_MS = 10_000;

/**
 * A create without preferred_node whose dispatch fails for the node's own reasons (unreachable,
 * reset, timeout, 5xx) tries the next best node, up to this many nodes in all...
 */
export const DISPATCH_NODES_TRIED = 3;
/** ...all within this, so a client waiting for the answer gets one well before 30 s. */
export const CREATE_DISPATCH_DEADLINE_MS = 20_000;

/**
 * Bounds a real host can have, so no reported number can win every placement or overflow a
 * sum: RAM below 2^31 MB (2 PiB), logical cores below 65,536.
 */
export const MAX_HOST_RAM_MB = 2 ** 31 - 1;
export const MAX_HOST_CPU_CORES = 65_535;
/** Disk room's figures below 2^40 MB (1 EiB); its overcommit at most VM_DISK_OVERCOMMIT's 100. */
export const MAX_HOST_DISK_MB = 2 ** 40;
export const MAX_DISK_OVERCOMMIT = 100;

/** Most VMs one heartbeat may list, and host ports one VM may forward. */
export const MAX_VMS_PER_HEARTBEAT = 1_024;
export const MAX_HOST_PORTS_PER_VM = 64;

/** A DNS name's maximum length. */
export const MAX_HOSTNAME_LENGTH = 253;

/**
 * How far ahead of the controller's receive time a heartbeat's stamp may be and still order
 * later heartbeats of its boot: NTP-synchronised clocks stay well within it.
 */
export const HEARTBEAT_STAMP_ALLOWANCE_MS = 2_000;

/**
 * How long a RAM hold outlives the dispatch timeout: a controller that died mid-dispatch
 * leaves nothing held for longer than the timeout plus this.
 */
export const RAM_HOLD_MARGIN_MS = 5_000;
