import { IsIn, Matches, ValidateBy, ValidationOptions } from 'class-validator';
import {
  DaemonConfig,
  EnvironmentVariable,
  IsBearerToken,
  IsListenAddress,
  ListenAddress,
  parseListenAddress,
  readEnvironment,
  refuseArguments as refuseDaemonArguments,
} from '@app/daemon';
import {
  DEFAULT_DISK_DIR,
  DEFAULT_HEARTBEAT_INTERVAL_S,
  DEFAULT_RESERVED,
  DEFAULT_SPAWN_PORT,
  HEARTBEAT_COMPOSE_ALLOWANCE_MS,
  HEARTBEAT_JITTER,
  ID_PATTERN,
  ID_RULE,
  MAX_HEARTBEAT_INTERVAL_S,
  MAX_HEARTBEAT_REQUEST_TIMEOUT_MS,
  NODE_STALE_AFTER_MS,
  isUnicastAddress,
  keepsNodeListed,
} from '@app/fleet-domain';
import { IsFleetEndpoints, endpointForLogs, readFleetEndpoints } from './fleet-endpoints';

const PORT = /^(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/;

function IsUnicastAddress(options: ValidationOptions): PropertyDecorator {
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
function IsHeartbeatInterval(): PropertyDecorator {
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
function IsDiskRetention(): PropertyDecorator {
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
function IsPortList(): PropertyDecorator {
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
function IsBackupEvery(): PropertyDecorator {
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
function IsBackupKeep(min: number): PropertyDecorator {
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

/**
 * The agent's configuration, each setting declared once with the variable it comes from and its
 * documented default (docs/reference.md's "Agent settings" and deploy/systemd/vm-host.env.example list
 * them; a test checks).
 */
export class VmHostConfig extends DaemonConfig {
  /** The controllers, tried in turn (fleet-endpoints.ts): one URL, or several separated by commas. */
  @EnvironmentVariable('VM_FLEET_ENDPOINT', {
    required: true,
    validate: IsFleetEndpoints(),
    read: readFleetEndpoints,
  })
  fleetEndpoints!: string[];
  /** The endpoints as logs show them: without any user:password@ they may carry. */
  fleetEndpointsForLogs!: string[];
  /** The same, joined for a log line. */
  fleetEndpointForLogs!: string;

  @EnvironmentVariable('VM_NODE_ID', {
    required: true,
    validate: Matches(ID_PATTERN, { message: `$property must be ${ID_RULE}` }),
  })
  nodeId!: string;

  @EnvironmentVariable('VM_WG_IP', {
    required: true,
    validate: IsUnicastAddress({
      message:
        '$property must be a unicast IPv4 or IPv6 address of this host (not 0.0.0.0, ::, multicast or broadcast)',
    }),
  })
  wgIp!: string;

  @EnvironmentVariable('VM_HEARTBEAT_INTERVAL_S', {
    validate: IsHeartbeatInterval(),
    read: Number,
    default: DEFAULT_HEARTBEAT_INTERVAL_S,
  })
  heartbeatIntervalS!: number;

  @EnvironmentVariable('VM_SPAWN_PORT', {
    validate: Matches(PORT, { message: '$property must be a port number from 1 to 65535' }),
    read: Number,
    default: DEFAULT_SPAWN_PORT,
  })
  spawnPort!: number;

  /**
   * TCP ports on VM_WG_IP no VM may forward from, beside the fleet daemons' own (see
   * FLEET_DAEMON_PORTS): a daemon on this machine the agent cannot know of, such as the
   * controller's operations listener moved to another port on this address.
   */
  @EnvironmentVariable('VM_RESERVED_HOST_PORTS', {
    validate: IsPortList(),
    read: (value) => [...new Set(value.split(',').map((port) => Number(port.trim())))],
  })
  reservedHostPorts?: number[];

  @EnvironmentVariable('VM_RESERVED', {
    validate: Matches(/^(true|false|1|0)$/i, { message: '$property must be true, false, 1 or 0' }),
    read: (value) => /^(true|1)$/i.test(value),
    default: DEFAULT_RESERVED,
  })
  reserved!: boolean;

  @EnvironmentVariable('VM_DISK_DIR', {
    validate: Matches(/^\//, { message: '$property must be an absolute path' }),
    default: DEFAULT_DISK_DIR,
  })
  diskDir!: string;

  /** Seconds a deleted VM's disk is kept before it is removed; 0 removes it with the VM. */
  @EnvironmentVariable('VM_DISK_RETENTION_S', {
    validate: IsDiskRetention(),
    read: Number,
    default: DEFAULT_DISK_RETENTION_S,
  })
  diskRetentionS!: number;

  @EnvironmentVariable('VM_BASE_IMAGE', {
    validate: Matches(/^\//, { message: '$property must be an absolute path to a qcow2 image' }),
  })
  baseImage?: string;

  @EnvironmentVariable('VM_SSH_PUBKEY', {
    validate: Matches(/^(ssh|ecdsa-sha2)-[A-Za-z0-9-]+ [A-Za-z0-9+/=]+( [^\n]*)?$/, {
      message: '$property must be one OpenSSH public key line (ssh-ed25519 AAAA... comment)',
    }),
  })
  sshPubkey?: string;

  /**
   * Sent on heartbeats, and required of the controller's calls; unset, the agent's API is open.
   * The fleet's shared token, or with per-node tokens this node's own: no other opens the API.
   */
  @EnvironmentVariable('VM_FLEET_NODE_TOKEN', { secret: true, validate: IsBearerToken() })
  nodeToken?: string;

  /** vCPUs this node's VMs may have together per logical core. */
  @EnvironmentVariable('VM_VCPU_OVERCOMMIT', {
    validate: Matches(/^(?:[1-9]\d{0,2}(?:\.\d{1,2})?|0\.(?:[1-9]\d?|0[1-9]))$/, {
      message:
        '$property must be a number of vCPUs per logical core, from 0.01 to 999 (e.g. 4 or 1.5)',
    }),
    read: Number,
    default: DEFAULT_VCPU_OVERCOMMIT,
  })
  vcpuOvercommit!: number;

  /**
   * Thin provisioning: VM disks' virtual sizes may add up to this many times the room in
   * VM_DISK_DIR. 1 (the default) never over-commits; above, a full file system pauses the VM
   * that writes (listed Error, resumed once there is room).
   */
  @EnvironmentVariable('VM_DISK_OVERCOMMIT', {
    validate: Matches(/^(?:[1-9]\d?(?:\.\d{1,2})?|100)$/, {
      message:
        "$property must be a ratio of VM disks' virtual sizes to the disk room, from 1 (no thin provisioning) to 100 (e.g. 1.5)",
    }),
    read: Number,
    default: DEFAULT_DISK_OVERCOMMIT,
  })
  diskOvercommit!: number;

  /** KVM or TCG for this node's VMs (see VM_ACCEL_MODES); prefer_kvm only steers placement. */
  @EnvironmentVariable('VM_ACCEL', {
    validate: IsIn(VM_ACCEL_MODES, {
      message: `$property must be one of ${VM_ACCEL_MODES.join(', ')}`,
    }),
    read: (value) => value as VmAccelMode,
    default: DEFAULT_VM_ACCEL,
  })
  accel!: VmAccelMode;

  /** Test-only: the provisioning step at which the agent kills itself (see FAILPOINTS). */
  @EnvironmentVariable('VM_HOST_FAILPOINT', {
    testOnly: true,
    validate: IsIn(FAILPOINTS, { message: `$property must be one of ${FAILPOINTS.join(', ')}` }),
    read: (value) => value as Failpoint,
  })
  failpoint?: Failpoint;

  /**
   * Test-only: the file the agent opens to judge KVM usable instead of /dev/kvm, so a test on a
   * machine without KVM can make the agent start VMs under KVM.
   */
  @EnvironmentVariable('VM_HOST_KVM_DEVICE', {
    testOnly: true,
    validate: Matches(/^\//, { message: '$property must be an absolute path' }),
  })
  kvmDevice?: string;

  /**
   * Where VM backups go (a USB disk or a NAS mount); unset: no backups. Not under VM_DISK_DIR:
   * a backup on the disk that dies with the VMs protects nothing.
   */
  @EnvironmentVariable('VM_BACKUP_DIR', {
    validate: Matches(/^\/(?!.*(?:^|\/)\.\.?(?:\/|$))/, {
      message: '$property must be an absolute path without . or .. parts',
    }),
  })
  backupDir?: string;

  @EnvironmentVariable('VM_BACKUP_EVERY_S', {
    validate: IsBackupEvery(),
    read: Number,
    default: DEFAULT_BACKUP_EVERY_S,
  })
  backupEveryS!: number;

  @EnvironmentVariable('VM_BACKUP_KEEP_LAST', {
    validate: IsBackupKeep(1),
    read: Number,
    default: DEFAULT_BACKUP_KEEP_LAST,
  })
  backupKeepLast!: number;

  @EnvironmentVariable('VM_BACKUP_KEEP_DAILY', {
    validate: IsBackupKeep(0),
    read: Number,
    default: DEFAULT_BACKUP_KEEP_DAILY,
  })
  backupKeepDaily!: number;

  @EnvironmentVariable('VM_BACKUP_KEEP_WEEKLY', {
    validate: IsBackupKeep(0),
    read: Number,
    default: DEFAULT_BACKUP_KEEP_WEEKLY,
  })
  backupKeepWeekly!: number;

  /** MB/s (10^6 bytes) a copy to a peer node may send at most; 0: unlimited. */
  @EnvironmentVariable('VM_COPY_MAX_MBPS', {
    validate: Matches(/^(?:0|[1-9]\d{0,5})$/, {
      message: `$property must be 0 (unlimited) or a whole number of MB/s up to ${MAX_COPY_MAX_MBPS}`,
    }),
    read: Number,
    default: DEFAULT_COPY_MAX_MBPS,
  })
  copyMaxMbps!: number;

  /** Where GET /metrics listens; unset means no metrics at all. */
  @EnvironmentVariable('VM_METRICS_ADDR', { validate: IsListenAddress(), read: parseListenAddress })
  metricsAddress?: ListenAddress;
}

/** Raised at start-up, before any heartbeat or socket, naming every variable at fault. */
export { ConfigurationError as VmHostConfigError } from '@app/daemon';

/**
 * Reads the configuration from the environment alone. An empty variable counts as unset.
 * Values are never echoed: the endpoint URL may carry credentials.
 */
export function loadVmHostConfig(env: NodeJS.ProcessEnv): VmHostConfig {
  const config = readEnvironment(VmHostConfig, env);
  config.fleetEndpointsForLogs = config.fleetEndpoints.map(endpointForLogs);
  config.fleetEndpointForLogs = config.fleetEndpointsForLogs.join(', ');
  return config;
}

/** The agent takes no flags: every argument is refused, pointing at the environment. */
export function refuseArguments(args: readonly string[]): void {
  refuseDaemonArguments('service-vm-host', args, VmHostConfig);
}
