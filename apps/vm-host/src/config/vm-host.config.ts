import { IsIn, IsOptional, Matches, ValidateBy, ValidationOptions } from 'class-validator';
import {
  DaemonEnvironment,
  IsBearerToken,
  IsListenAddress,
  ListenAddress,
  LogFormat,
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
  isUnicastAddress,
} from '@app/fleet-domain';

const REQUIRED = ['VM_FLEET_ENDPOINT', 'VM_NODE_ID', 'VM_WG_IP'] as const;
/** Also readable from a file named by VM_FLEET_NODE_TOKEN_FILE (systemd credentials). */
const SECRETS = ['VM_FLEET_NODE_TOKEN'];

const PORT = /^(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/;

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

function IsHttpUrl(options: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name: 'isHttpUrl', validator: { validate: isHttpUrl } }, options);
}

function IsUnicastAddress(options: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    { name: 'isUnicastAddress', validator: { validate: isUnicastAddress } },
    options,
  );
}

/**
 * Where provisioning can be made to crash the agent (SIGKILL, no clean-up), for the test that
 * proves no VM and no QEMU process is lost whatever the moment. Test-only: not for operators.
 */
export const FAILPOINTS = [
  'after-sidecar',
  'after-disk',
  'after-seed',
  'after-launch-before-pid-written',
  'after-pid-written',
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/** vCPUs the agent lets its VMs have per logical core, unless VM_VCPU_OVERCOMMIT says otherwise. */
export const DEFAULT_VCPU_OVERCOMMIT = 4;

/** The agent's environment as given: strings, checked here once at start-up. */
class VmHostEnvironment extends DaemonEnvironment {
  @IsHttpUrl({
    message: 'VM_FLEET_ENDPOINT must be an http(s) URL such as http://<fleet-controller-host>:9203',
  })
  VM_FLEET_ENDPOINT!: string;

  @Matches(ID_PATTERN, { message: `VM_NODE_ID must be ${ID_RULE}` })
  VM_NODE_ID!: string;

  @IsUnicastAddress({
    message:
      'VM_WG_IP must be a unicast IPv4 or IPv6 address of this host (not 0.0.0.0, ::, multicast or broadcast)',
  })
  VM_WG_IP!: string;

  @IsOptional()
  @Matches(/^[1-9]\d{0,5}$/, {
    message: 'VM_HEARTBEAT_INTERVAL_S must be a positive whole number of seconds',
  })
  VM_HEARTBEAT_INTERVAL_S?: string;

  @IsOptional()
  @Matches(PORT, { message: 'VM_SPAWN_PORT must be a port number from 1 to 65535' })
  VM_SPAWN_PORT?: string;

  @IsOptional()
  @Matches(/^(true|false|1|0)$/i, { message: 'VM_RESERVED must be true, false, 1 or 0' })
  VM_RESERVED?: string;

  @IsOptional()
  @Matches(/^\//, { message: 'VM_DISK_DIR must be an absolute path' })
  VM_DISK_DIR?: string;

  @IsOptional()
  @Matches(/^\//, { message: 'VM_BASE_IMAGE must be an absolute path to a qcow2 image' })
  VM_BASE_IMAGE?: string;

  @IsOptional()
  @Matches(/^(ssh|ecdsa-sha2)-[A-Za-z0-9-]+ [A-Za-z0-9+/=]+( [^\n]*)?$/, {
    message: 'VM_SSH_PUBKEY must be one OpenSSH public key line (ssh-ed25519 AAAA... comment)',
  })
  VM_SSH_PUBKEY?: string;

  @IsOptional()
  @IsBearerToken('VM_FLEET_NODE_TOKEN')
  VM_FLEET_NODE_TOKEN?: string;

  @IsOptional()
  @Matches(/^(?:[1-9]\d{0,2}(?:\.\d{1,2})?|0\.(?:[1-9]\d?|0[1-9]))$/, {
    message:
      'VM_VCPU_OVERCOMMIT must be a number of vCPUs per logical core, from 0.01 to 999 (e.g. 4 or 1.5)',
  })
  VM_VCPU_OVERCOMMIT?: string;

  // Test-only (see FAILPOINTS); read once here, at start-up.
  @IsOptional()
  @IsIn(FAILPOINTS, { message: `VM_HOST_FAILPOINT must be one of ${FAILPOINTS.join(', ')}` })
  VM_HOST_FAILPOINT?: string;

  @IsOptional()
  @IsListenAddress()
  VM_METRICS_ADDR?: string;
}

/** The agent's configuration, typed and with the documented defaults applied. */
export class VmHostConfig {
  fleetEndpoint!: string;
  /** The endpoint as logs show it: without any user:password@ it may carry. */
  fleetEndpointForLogs!: string;
  nodeId!: string;
  wgIp!: string;
  heartbeatIntervalS!: number;
  spawnPort!: number;
  reserved!: boolean;
  diskDir!: string;
  baseImage?: string;
  sshPubkey?: string;
  /** Sent on heartbeats, and required of the controller's calls; unset, the agent's API is open. */
  nodeToken?: string;
  /** vCPUs this node's VMs may have together per logical core. */
  vcpuOvercommit!: number;
  /** Test-only: the provisioning step at which the agent kills itself. */
  failpoint?: Failpoint;
  /** Where GET /metrics listens (VM_METRICS_ADDR); unset means no metrics at all. */
  metricsAddress?: ListenAddress;
  /** VM_LOG_FORMAT; unset is text. */
  logFormat?: LogFormat;
}

/** Raised at start-up, before any heartbeat or socket, naming every variable at fault. */
export { ConfigurationError as VmHostConfigError } from '@app/daemon';

/**
 * Reads the configuration from the environment alone. An empty variable counts as unset.
 * Values are never echoed: the endpoint URL may carry credentials.
 */
export function loadVmHostConfig(env: NodeJS.ProcessEnv): VmHostConfig {
  const given = readEnvironment(VmHostEnvironment, env, REQUIRED, SECRETS);

  const config = new VmHostConfig();
  config.fleetEndpoint = given.VM_FLEET_ENDPOINT.replace(/\/+$/, '');
  const endpoint = new URL(config.fleetEndpoint);
  endpoint.username = '';
  endpoint.password = '';
  config.fleetEndpointForLogs = endpoint.toString().replace(/\/+$/, '');
  config.nodeId = given.VM_NODE_ID;
  config.wgIp = given.VM_WG_IP;
  config.heartbeatIntervalS = Number(given.VM_HEARTBEAT_INTERVAL_S ?? DEFAULT_HEARTBEAT_INTERVAL_S);
  config.spawnPort = Number(given.VM_SPAWN_PORT ?? DEFAULT_SPAWN_PORT);
  config.reserved =
    given.VM_RESERVED === undefined ? DEFAULT_RESERVED : /^(true|1)$/i.test(given.VM_RESERVED);
  config.diskDir = given.VM_DISK_DIR ?? DEFAULT_DISK_DIR;
  config.baseImage = given.VM_BASE_IMAGE;
  config.sshPubkey = given.VM_SSH_PUBKEY;
  config.nodeToken = given.VM_FLEET_NODE_TOKEN;
  config.vcpuOvercommit = Number(given.VM_VCPU_OVERCOMMIT ?? DEFAULT_VCPU_OVERCOMMIT);
  config.failpoint = given.VM_HOST_FAILPOINT as Failpoint | undefined;
  if (given.VM_METRICS_ADDR) config.metricsAddress = parseListenAddress(given.VM_METRICS_ADDR);
  if (given.VM_LOG_FORMAT === 'json') config.logFormat = 'json';
  return config;
}

const OPTIONAL = [
  'VM_HEARTBEAT_INTERVAL_S',
  'VM_SPAWN_PORT',
  'VM_RESERVED',
  'VM_DISK_DIR',
  'VM_BASE_IMAGE',
  'VM_SSH_PUBKEY',
  'VM_FLEET_NODE_TOKEN',
  'VM_FLEET_NODE_TOKEN_FILE',
  'VM_VCPU_OVERCOMMIT',
  'VM_METRICS_ADDR',
  'VM_LOG_FORMAT',
];

/** The agent takes no flags: every argument is refused, pointing at the environment. */
export function refuseArguments(args: readonly string[]): void {
  refuseDaemonArguments('service-vm-host', args, [
    ...REQUIRED,
    ...OPTIONAL.map((name) => `${name} (optional)`),
  ]);
}
