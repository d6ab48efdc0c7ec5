import { Matches, ValidateBy } from 'class-validator';
import {
  DEFAULT_FENCE_AFTER_S,
  DEFAULT_RECOVER_AFTER_S,
  MAX_COPY_EVERY_S,
  MAX_FENCE_AFTER_S,
  MIN_COPY_EVERY_S,
  MIN_FENCE_AFTER_S,
} from '@app/fleet-domain';
import {
  DaemonConfig,
  EnvironmentVariable,
  IsBearerToken,
  IsListenAddress,
  IsNodeSecret,
  IsTenantSecret,
  ListenAddress,
  parseListenAddress,
} from '@app/daemon';
import { TenantQuota } from '@app/fleet-domain';
import {
  isEtcdEndpoints,
  isHostNameList,
  isRedisUrl,
  normalHostName,
  parseEtcdEndpoints,
} from './fleet-config.values';

/** Raised at start-up, naming the variable at fault (never its value: a URL may hold a password). */
export { ConfigurationError as FleetConfigError } from '@app/daemon';

/** By default each VM has one copy on another node, at most a minute old. */
export const DEFAULT_FLEET_COPIES = 1;
export const DEFAULT_FLEET_COPY_EVERY_S = 60;

/** The operations listener's default address: the controller's own host only. */
export const DEFAULT_OPS_ADDRESS = '127.0.0.1:9206';
/** VM_FLEET_OPS_ADDR's value that serves no operations listener (empty means the default). */
export const OPS_LISTENER_OFF = 'off';

/**
 * The controller's configuration, each setting declared once with the variable it comes from
 * (docs/reference.md's controller table and deploy/systemd/vm-fleet.env.example list them; a test checks).
 * Its port is fixed by contract; the settings are where fleet state lives (this process's
 * memory, the documented default, or a shared Redis), the opt-in tokens and observability.
 */
export class FleetConfig extends DaemonConfig {
  /** redis:// or rediss:// URL; unset means in memory. */
  @EnvironmentVariable('VM_FLEET_REDIS_URL', {
    validate: ValidateBy(
      { name: 'isRedisUrl', validator: { validate: isRedisUrl } },
      { message: '$property must be a redis:// or rediss:// URL such as redis://10.8.0.9:6379/0' },
    ),
  })
  redisUrl?: string;
  /** The same URL as logs show it, without credentials. */
  redisUrlForLogs?: string;
  /**
   * etcd's client URLs, comma-separated (http:// or https://, scheme://host:port only, at most
   * 16): fleet state shared in etcd instead; unset means in memory (or Redis).
   */
  @EnvironmentVariable('VM_FLEET_ETCD_ENDPOINTS', {
    validate: ValidateBy(
      { name: 'isEtcdEndpoints', validator: { validate: isEtcdEndpoints } },
      {
        message:
          '$property must be 1 to 16 comma-separated http:// or https:// URLs (scheme://host:port only) such as http://10.8.0.5:2379,http://10.8.0.6:2379',
      },
    ),
    read: parseEtcdEndpoints,
  })
  etcdEndpoints?: string[];
  /** The etcd user the controller authenticates as (etcd auth enabled); needs the password. */
  @EnvironmentVariable('VM_FLEET_ETCD_USERNAME', {
    validate: Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
      message: '$property must be 1 to 64 letters, digits, ".", "_" or "-"',
    }),
  })
  etcdUsername?: string;
  /** That user's password; best as VM_FLEET_ETCD_PASSWORD_FILE. */
  @EnvironmentVariable('VM_FLEET_ETCD_PASSWORD', {
    secret: true,
    validate: Matches(/^[\x21-\x7e]{1,256}$/, {
      message: '$property must be 1 to 256 printable characters without spaces',
    }),
  })
  etcdPassword?: string;
  /** A CA file (PEM) the https:// endpoints' certificates are checked against, instead of the system's. */
  @EnvironmentVariable('VM_FLEET_ETCD_CA_FILE', {
    validate: Matches(/^\//, { message: '$property must be an absolute path' }),
  })
  etcdCaFile?: string;
  /** The controller's client certificate (PEM) for etcd's --client-cert-auth; with its key. */
  @EnvironmentVariable('VM_FLEET_ETCD_CERT_FILE', {
    validate: Matches(/^\//, { message: '$property must be an absolute path' }),
  })
  etcdCertFile?: string;
  /** That certificate's private key (PEM); best as VM_FLEET_ETCD_KEY_FILE (mode 600). */
  @EnvironmentVariable('VM_FLEET_ETCD_KEY', {
    secret: true,
    validate: ValidateBy(
      {
        name: 'isPemPrivateKey',
        validator: {
          validate: (value: unknown) =>
            typeof value === 'string' && /^-----BEGIN [A-Z ]*PRIVATE KEY-----\n/.test(value),
        },
      },
      { message: '$property must be a PEM private key (-----BEGIN ... PRIVATE KEY-----)' },
    ),
  })
  etcdKey?: string;
  /** The CA and certificate files, read and checked at start (loadFleetConfig). */
  etcdCa?: string;
  etcdCert?: string;
  /**
   * The one token of every node: heartbeats need it, and the controller sends it to agents;
   * unset (and no node secret), heartbeats are open. Beside the node secret, it is still taken
   * from any node: the migration to per-node tokens.
   */
  @EnvironmentVariable('VM_FLEET_NODE_TOKEN', { secret: true, validate: IsBearerToken() })
  nodeToken?: string;
  /**
   * Per-node tokens: node X's token is deriveNodeToken(secret, X), valid for node X only, on
   * its heartbeats and on the controller's calls to its agent.
   */
  @EnvironmentVariable('VM_FLEET_NODE_SECRET', { secret: true, validate: IsNodeSecret() })
  nodeSecret?: string;
  /**
   * The node secret before a rotation: each node's token under it is still taken, for that
   * node only, until every node has its token under the new one.
   */
  @EnvironmentVariable('VM_FLEET_NODE_SECRET_PREVIOUS', {
    secret: true,
    validate: IsNodeSecret(),
  })
  previousNodeSecret?: string;
  /** Every other route needs it; unset, they are open. */
  @EnvironmentVariable('VM_FLEET_API_TOKEN', { secret: true, validate: IsBearerToken() })
  apiToken?: string;
  /**
   * Tenants' own tokens: tenant X's token is deriveTenantToken(secret, X), valid for tenant X's
   * VMs only, for the tenants VM_FLEET_TENANT_QUOTAS_FILE names. Needs VM_FLEET_API_TOKEN.
   */
  @EnvironmentVariable('VM_FLEET_TENANT_SECRET', { secret: true, validate: IsTenantSecret() })
  tenantSecret?: string;
  /** JSON of tenant id to its quota (vms, ram_mb, vcpus, disk_gb; a key left out: no limit). */
  @EnvironmentVariable('VM_FLEET_TENANT_QUOTAS_FILE', {
    validate: Matches(/^\//, { message: '$property must be an absolute path' }),
  })
  tenantQuotasFile?: string;
  /** The quotas file, read and checked at start (loadFleetConfig). */
  tenantQuotas?: Map<string, TenantQuota>;
  /** A file the audit log's JSON lines are appended to (0600); unset: the controller's log. */
  @EnvironmentVariable('VM_FLEET_AUDIT_LOG', {
    validate: Matches(/^\//, { message: '$property must be an absolute path' }),
  })
  auditLog?: string;
  /** Where GET /metrics listens; unset means no metrics at all. */
  @EnvironmentVariable('VM_FLEET_METRICS_ADDR', {
    validate: IsListenAddress(),
    read: parseListenAddress,
  })
  metricsAddress?: ListenAddress;
  /**
   * Where the operations listener (life cycles, stop/start/restart, consoles) listens: this
   * host's own address, loopback by default so only the controller's host reaches it; `off`
   * serves none. Beside the API, whose route table the contract fixes.
   */
  @EnvironmentVariable('VM_FLEET_OPS_ADDR', {
    validate: ValidateBy(
      {
        name: 'isOpsAddress',
        validator: {
          validate: (value: unknown) =>
            value === OPS_LISTENER_OFF ||
            (typeof value === 'string' && parseListenAddress(value) !== undefined),
        },
      },
      {
        message: `$property must be ${OPS_LISTENER_OFF} or host:port with a unicast IP address of this host (not 0.0.0.0 or ::), such as ${DEFAULT_OPS_ADDRESS} or [::1]:9206`,
      },
    ),
    default: DEFAULT_OPS_ADDRESS,
  })
  opsAddress?: string;

  /**
   * Host names (or addresses) the operations listener answers to beside its own address (and
   * `localhost` when that is loopback): the name operators reach it by, through a proxy or DNS.
   * Any other Host header is refused, so a DNS-rebound name cannot reach the console.
   */
  @EnvironmentVariable('VM_FLEET_OPS_HOSTS', {
    validate: ValidateBy(
      { name: 'isHostNameList', validator: { validate: isHostNameList } },
      {
        message:
          '$property must be host names or IP addresses separated by commas, without ports, at most 16, such as fleet.example.org,10.8.0.1',
      },
    ),
    read: (value) => [...new Set(value.split(',').map((name) => normalHostName(name)))],
  })
  opsHosts?: string[];

  /** Copies of each VM on other nodes, for a create that does not say (its `copies`). */
  @EnvironmentVariable('VM_FLEET_COPIES', {
    validate: Matches(/^[0-2]$/, { message: '$property must be 0, 1 or 2' }),
    read: Number,
    default: DEFAULT_FLEET_COPIES,
  })
  copies!: number;

  /** Seconds between two copies of a running VM, for a create that does not say. */
  @EnvironmentVariable('VM_FLEET_COPY_EVERY_S', {
    validate: ValidateBy(
      {
        name: 'isCopyEvery',
        validator: {
          validate: (value: unknown) =>
            typeof value === 'string' &&
            /^[1-9]\d{0,5}$/.test(value) &&
            Number(value) >= MIN_COPY_EVERY_S &&
            Number(value) <= MAX_COPY_EVERY_S,
        },
      },
      {
        message: `$property must be a whole number of seconds from ${MIN_COPY_EVERY_S} to ${MAX_COPY_EVERY_S}`,
      },
    ),
    read: Number,
    default: DEFAULT_FLEET_COPY_EVERY_S,
  })
  copyEveryS!: number;

  /** etcd mode: a node keeps its protected VMs running this long past an unrenewed lease. */
  @EnvironmentVariable('VM_FLEET_FENCE_AFTER_S', {
    validate: wholeSecondsFrom(MIN_FENCE_AFTER_S, MAX_FENCE_AFTER_S),
    read: Number,
    default: DEFAULT_FENCE_AFTER_S,
  })
  fenceAfterS!: number;

  /** etcd mode: the leader recovers a node's protected VMs this long after its last renewal. */
  @EnvironmentVariable('VM_FLEET_RECOVER_AFTER_S', {
    validate: wholeSecondsFrom(1, 86_400),
    read: Number,
    default: DEFAULT_RECOVER_AFTER_S,
  })
  recoverAfterS!: number;

  /** The operations listener's address; undefined when VM_FLEET_OPS_ADDR is `off`. */
  get opsListenAddress(): ListenAddress | undefined {
    return this.opsAddress === undefined || this.opsAddress === OPS_LISTENER_OFF
      ? undefined
      : parseListenAddress(this.opsAddress);
  }
}

function wholeSecondsFrom(least: number, most: number): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isWholeSeconds',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          /^[1-9]\d{0,5}$/.test(value) &&
          Number(value) >= least &&
          Number(value) <= most,
      },
    },
    { message: `$property must be a whole number of seconds from ${least} to ${most}` },
  );
}
