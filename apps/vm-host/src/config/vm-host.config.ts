import { IsIn, Matches } from 'class-validator';
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
  ID_PATTERN,
  ID_RULE,
} from '@app/fleet-domain';
import {
  DEFAULT_BACKUP_EVERY_S,
  DEFAULT_BACKUP_KEEP_DAILY,
  DEFAULT_BACKUP_KEEP_LAST,
  DEFAULT_BACKUP_KEEP_WEEKLY,
  DEFAULT_COPY_MAX_MBPS,
  DEFAULT_DISK_OVERCOMMIT,
  DEFAULT_DISK_RETENTION_S,
  DEFAULT_VCPU_OVERCOMMIT,
  DEFAULT_VM_ACCEL,
  FAILPOINTS,
  Failpoint,
  IsBackupEvery,
  IsBackupKeep,
  IsDiskRetention,
  IsHeartbeatInterval,
  IsPortList,
  IsUnicastAddress,
  MAX_COPY_MAX_MBPS,
  PORT,
  VM_ACCEL_MODES,
  VmAccelMode,
} from './vm-host-config.values';
import { IsFleetEndpoints, endpointForLogs, readFleetEndpoints } from './fleet-endpoints';

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

  /**
   * The routing mesh (docs/vms.md "Reaching a service"): this node listens at VM_WG_IP on the
   * published TCP ports of other nodes' VMs and forwards to them. Off: none here (host ports
   * are still kept unique across the fleet).
   */
  @EnvironmentVariable('VM_ROUTING_MESH', {
    validate: Matches(/^(true|false|1|0)$/i, { message: '$property must be true, false, 1 or 0' }),
    read: (value) => /^(true|1)$/i.test(value),
    default: true,
  })
  routingMesh!: boolean;

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
