/**
 * Bounds of self-fencing (etcd mode only): a node may keep its protected VMs running until
 * `fence_after_s` seconds after it sent the heartbeat whose answer carried that value.
 */
export const MIN_FENCE_AFTER_S = 10;
export const MAX_FENCE_AFTER_S = 600;
export const DEFAULT_FENCE_AFTER_S = 45;
export const DEFAULT_RECOVER_AFTER_S = 90;
/** The most VM ids a heartbeat lists as fenced (as many as a node can run). */
export const MAX_FENCED_VMS_REPORTED = 1024;
