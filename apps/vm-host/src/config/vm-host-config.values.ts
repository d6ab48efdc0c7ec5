/** The agent's settings' values: their choices, defaults and bounds, and the checks VmHostConfig's variables name. */
import { ValidateBy, ValidationOptions } from 'class-validator';
import {
  HEARTBEAT_COMPOSE_ALLOWANCE_MS,
  HEARTBEAT_JITTER,
  MAX_HEARTBEAT_INTERVAL_S,
  MAX_HEARTBEAT_REQUEST_TIMEOUT_MS,
  NODE_STALE_AFTER_MS,
  isUnicastAddress,
  keepsNodeListed,
} from '@app/fleet-domain';

export const PORT = /^(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/;

export function IsUnicastAddress(options: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    { name: 'isUnicastAddress', validator: { validate: isUnicastAddress } },
    options,
  );
}

const WHOLE_SECONDS = /^[1-9]\d{0,5}$/;

/**
 * A whole number of seconds short enough to keep the node listed: the controller drops a node
 * it has not heard from for 30 s, and a longer interval would make the node come and go.
 */
export function IsHeartbeatInterval(): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isHeartbeatInterval',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' && WHOLE_SECONDS.test(value) && keepsNodeListed(Number(value)),
      },
    },
    {
      message: ({ value }) =>
        typeof value === 'string' && WHOLE_SECONDS.test(value)
          ? `$property must be at most ${MAX_HEARTBEAT_INTERVAL_S} s: the controller drops a node silent for ${NODE_STALE_AFTER_MS / 1000} s, and a longer interval (beats up to ${Math.round(HEARTBEAT_JITTER * 100)}% late, a request up to ${MAX_HEARTBEAT_REQUEST_TIMEOUT_MS / 1000} s, ${HEARTBEAT_COMPOSE_ALLOWANCE_MS / 1000} s to read the VMs) could leave it silent that long`
          : '$property must be a positive whole number of seconds',
    },
  );
}

/**
 * Where provisioning can be made to crash the agent (SIGKILL, no clean-up), for the test that
 * proves no VM and no QEMU process is lost whatever the moment. Test-only: not for operators.
 */
export const FAILPOINTS = [
  'before-sidecar',
  'after-sidecar',
  'after-disk',
  'after-seed',
  'after-launch-before-pid-written',
  'after-pid-written',
  // A backup's QEMU job started, not ended (apps/vm-host/src/vms/copies/).
  'during-copy',
  // A live move in: its QEMU ran the guest (`cont`), its sidecar still marked restoring.
  'after-move-take-over',
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/**
 * How the agent accelerates its VMs: `auto` runs each under KVM when /dev/kvm is usable (falling
 * back to TCG when KVM fails), `kvm` requires KVM (a VM that cannot run under it is an Error),
 * `tcg` never uses KVM.
 */
export const VM_ACCEL_MODES = ['auto', 'kvm', 'tcg'] as const;
export type VmAccelMode = (typeof VM_ACCEL_MODES)[number];
export const DEFAULT_VM_ACCEL: VmAccelMode = 'auto';

/** vCPUs the agent lets its VMs have per logical core, unless VM_VCPU_OVERCOMMIT says otherwise. */
export const DEFAULT_VCPU_OVERCOMMIT = 4;
/** No thin provisioning: every VM disk's virtual size fits the node's disk room. */
export const DEFAULT_DISK_OVERCOMMIT = 1;

/**
 * Seconds a deleted VM's disk is kept (for an operator to recover it) before the agent removes
 * it: a day, so a mistaken delete can be undone and no node fills up with old disks.
 */
export const DEFAULT_DISK_RETENTION_S = 86_400;
/** At most 30 days: nothing grows without bound. */
export const MAX_DISK_RETENTION_S = 30 * 86_400;

/** 0 or a whole number of seconds up to MAX_DISK_RETENTION_S. */
export function IsDiskRetention(): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isDiskRetention',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          /^(?:0|[1-9]\d{0,7})$/.test(value) &&
          Number(value) <= MAX_DISK_RETENTION_S,
      },
    },
    {
      message: `$property must be a whole number of seconds from 0 (remove at once) to ${MAX_DISK_RETENTION_S} (30 days)`,
    },
  );
}

/** At most this many ports in VM_RESERVED_HOST_PORTS. */
export const MAX_RESERVED_HOST_PORTS = 64;

/** Port numbers (1-65535) separated by commas, at most MAX_RESERVED_HOST_PORTS of them. */
export function IsPortList(): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isPortList',
      validator: {
        validate: (value: unknown) => {
          if (typeof value !== 'string') return false;
          const ports = value.split(',').map((port) => port.trim());
          return ports.length <= MAX_RESERVED_HOST_PORTS && ports.every((port) => PORT.test(port));
        },
      },
    },
    {
      message: `$property must be TCP port numbers from 1 to 65535 separated by commas (e.g. 9300,9301), at most ${MAX_RESERVED_HOST_PORTS}`,
    },
  );
}

/**
 * How often each VM is backed up to VM_BACKUP_DIR by default: once a day, as vzdump's usual
 * schedule; 0 backs up only when asked (ppn-fleet vm backup).
 */
export const DEFAULT_BACKUP_EVERY_S = 86_400;
/** At least a minute between scheduled backups, at most 30 days. */
export const MIN_BACKUP_EVERY_S = 60;
export const MAX_BACKUP_EVERY_S = 30 * 86_400;
/** Retention's defaults, as `keep-last`, `keep-daily`, `keep-weekly` of vzdump. */
export const DEFAULT_BACKUP_KEEP_LAST = 3;
export const DEFAULT_BACKUP_KEEP_DAILY = 7;
export const DEFAULT_BACKUP_KEEP_WEEKLY = 4;
export const MAX_BACKUP_KEEP = 1000;
/** A VM's copies to peer nodes go out at most this fast by default (MB/s), so guests keep the disk and link. */
export const DEFAULT_COPY_MAX_MBPS = 40;
export const MAX_COPY_MAX_MBPS = 100_000;

/** 0, or a whole number of seconds from MIN_BACKUP_EVERY_S to MAX_BACKUP_EVERY_S. */
export function IsBackupEvery(): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isBackupEvery',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          /^(?:0|[1-9]\d{0,7})$/.test(value) &&
          (Number(value) === 0 ||
            (Number(value) >= MIN_BACKUP_EVERY_S && Number(value) <= MAX_BACKUP_EVERY_S)),
      },
    },
    {
      message: `$property must be 0 (backups only when asked) or a whole number of seconds from ${MIN_BACKUP_EVERY_S} to ${MAX_BACKUP_EVERY_S} (30 days)`,
    },
  );
}

/** A whole number of backups from `min` to MAX_BACKUP_KEEP. */
export function IsBackupKeep(min: number): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isBackupKeep',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          /^\d{1,4}$/.test(value) &&
          Number(value) >= min &&
          Number(value) <= MAX_BACKUP_KEEP,
      },
    },
    { message: `$property must be a whole number from ${min} to ${MAX_BACKUP_KEEP}` },
  );
}
