/** The controller's port. Hardcoded by contract: no flag or variable changes it. */
export const FLEET_PORT = 9203;

/** A node silent for longer than this is dropped from every listing. */
export const NODE_STALE_AFTER_MS = 30_000;

/** How often the controller sweeps stale nodes out of its store. */
export const STALENESS_SWEEP_INTERVAL_MS = 1_000;

/** Headroom placement keeps free on a node beyond the VM's own RAM (not applied to `preferred_node`). */
export const PLACEMENT_MARGIN_MB = 512;

/** Largest request body either daemon accepts. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Agent defaults, as documented in the enrollment how-to. */
export const DEFAULT_HEARTBEAT_INTERVAL_S = 10;
export const DEFAULT_SPAWN_PORT = 9204;
export const DEFAULT_RESERVED = false;
export const DEFAULT_DISK_DIR = '/var/lib/vm-fleet';

/** How long the controller waits for an agent to answer a spawn or destroy call. */
export const AGENT_REQUEST_TIMEOUT_MS = 10_000;

/**
 * How long a RAM hold outlives the dispatch timeout: a controller that died mid-dispatch
 * leaves nothing held for longer than the timeout plus this.
 */
export const RAM_HOLD_MARGIN_MS = 5_000;
