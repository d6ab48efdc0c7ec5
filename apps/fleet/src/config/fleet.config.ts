import { IsOptional, ValidateBy } from 'class-validator';
import {
  ConfigurationError,
  DaemonEnvironment,
  IsBearerToken,
  IsListenAddress,
  ListenAddress,
  LogFormat,
  parseListenAddress,
  readEnvironment,
  refuseArguments as refuseDaemonArguments,
} from '@app/daemon';

/** Raised at start-up, naming the variable at fault (never its value: a URL may hold a password). */
export { ConfigurationError as FleetConfigError } from '@app/daemon';

function isRedisUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
}

/** The controller's environment as given: strings, checked here once at start-up. */
class FleetEnvironment extends DaemonEnvironment {
  @IsOptional()
  @ValidateBy(
    { name: 'isRedisUrl', validator: { validate: isRedisUrl } },
    {
      message:
        'VM_FLEET_REDIS_URL must be a redis:// or rediss:// URL such as redis://10.8.0.9:6379/0',
    },
  )
  VM_FLEET_REDIS_URL?: string;

  @IsOptional()
  @IsBearerToken('VM_FLEET_NODE_TOKEN')
  VM_FLEET_NODE_TOKEN?: string;

  @IsOptional()
  @IsBearerToken('VM_FLEET_API_TOKEN')
  VM_FLEET_API_TOKEN?: string;

  @IsOptional()
  @IsListenAddress()
  VM_FLEET_METRICS_ADDR?: string;
}

/** Each also readable from a file named by <name>_FILE (systemd credentials). */
const SECRETS = ['VM_FLEET_NODE_TOKEN', 'VM_FLEET_API_TOKEN'];

const VARIABLES = [
  'VM_FLEET_REDIS_URL',
  ...SECRETS.flatMap((name) => [name, `${name}_FILE`]),
  'VM_FLEET_METRICS_ADDR',
  'VM_LOG_FORMAT',
];

/**
 * The controller's configuration. Its port is fixed by contract; the settings are where fleet
 * state lives (this process's memory, the documented default, or a shared Redis) and the
 * opt-in tokens.
 */
export class FleetConfig {
  /** redis:// or rediss:// URL; unset means in memory. */
  redisUrl?: string;
  /** The same URL as logs show it, without credentials. */
  redisUrlForLogs?: string;
  /** Heartbeats need it, and the controller sends it to agents; unset, heartbeats are open. */
  nodeToken?: string;
  /** Every other route needs it; unset, they are open. */
  apiToken?: string;
  /** Where GET /metrics listens (VM_FLEET_METRICS_ADDR); unset means no metrics at all. */
  metricsAddress?: ListenAddress;
  /** VM_LOG_FORMAT; unset is text. */
  logFormat?: LogFormat;
}

export function loadFleetConfig(env: NodeJS.ProcessEnv): FleetConfig {
  const given = readEnvironment(FleetEnvironment, env, [], SECRETS);
  if (given.VM_FLEET_NODE_TOKEN && given.VM_FLEET_NODE_TOKEN === given.VM_FLEET_API_TOKEN) {
    // Then every agent, which holds the node token, could act as an operator.
    throw new ConfigurationError('VM_FLEET_API_TOKEN must differ from VM_FLEET_NODE_TOKEN');
  }
  const config = new FleetConfig();
  config.nodeToken = given.VM_FLEET_NODE_TOKEN;
  config.apiToken = given.VM_FLEET_API_TOKEN;
  if (given.VM_FLEET_REDIS_URL) {
    config.redisUrl = given.VM_FLEET_REDIS_URL;
    const url = new URL(config.redisUrl);
    url.username = '';
    url.password = '';
    // ioredis also reads ?password= (and more) from the query: logs and 503s show none of it.
    url.search = '';
    config.redisUrlForLogs = url.toString();
  }
  if (given.VM_FLEET_METRICS_ADDR) {
    config.metricsAddress = parseListenAddress(given.VM_FLEET_METRICS_ADDR);
  }
  if (given.VM_LOG_FORMAT === 'json') config.logFormat = 'json';
  return config;
}

/** The controller takes no flags (its port is fixed): every argument is refused. */
export function refuseArguments(args: readonly string[]): void {
  refuseDaemonArguments(
    'service-vm-fleet',
    args,
    VARIABLES.map((name) => `${name} (optional)`),
  );
}
