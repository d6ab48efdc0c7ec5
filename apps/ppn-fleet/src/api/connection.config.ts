import { ValidateBy } from 'class-validator';
import {
  ConfigurationError,
  EnvironmentVariable,
  IsBearerToken,
  readEnvironment,
} from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';

export const DEFAULT_ENDPOINT = `http://127.0.0.1:${FLEET_PORT}`;
/** The controller's operations listener as it listens by default (VM_FLEET_OPS_ADDR). */
export const DEFAULT_OPS_ENDPOINT = 'http://127.0.0.1:9206';

const ENDPOINT_RULE =
  'must be an http(s) URL of the controller such as http://<fleet-controller-host>:9203';
const OPS_ENDPOINT_RULE =
  "must be an http(s) URL of the controller's operations listener such as http://127.0.0.1:9206";

/** An http or https URL with a host, no credentials (the token has its own variable). */
export function isEndpointUrl(value: unknown): value is string {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.hostname !== '' &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === ''
  );
}

/**
 * How the CLI reaches the controller, from the environment: the controller's own variable names
 * (VM_FLEET_API_TOKEN, VM_FLEET_API_TOKEN_FILE) with the daemons' rules and file checks.
 */
export class ConnectionConfig {
  @EnvironmentVariable('VM_FLEET_ENDPOINT', {
    validate: ValidateBy(
      { name: 'isEndpointUrl', validator: { validate: isEndpointUrl } },
      { message: `$property ${ENDPOINT_RULE}` },
    ),
    default: DEFAULT_ENDPOINT,
  })
  endpoint!: string;

  @EnvironmentVariable('VM_FLEET_OPS_ENDPOINT', {
    validate: ValidateBy(
      { name: 'isEndpointUrl', validator: { validate: isEndpointUrl } },
      { message: `$property ${OPS_ENDPOINT_RULE}` },
    ),
    default: DEFAULT_OPS_ENDPOINT,
  })
  opsEndpoint!: string;

  @EnvironmentVariable('VM_FLEET_API_TOKEN', { secret: true, validate: IsBearerToken() })
  apiToken?: string;
}

/** The endpoint options of one run, each over its variable. */
export interface EndpointOptions {
  endpoint?: string;
  opsEndpoint?: string;
}

/**
 * The connection for one run: `--endpoint` (when given) over VM_FLEET_ENDPOINT over the
 * default, and the same for `--ops-endpoint` and VM_FLEET_OPS_ENDPOINT. Throws
 * ConfigurationError naming the option or variable at fault, never a value.
 */
export function readConnection(
  env: NodeJS.ProcessEnv,
  options: EndpointOptions = {},
): ConnectionConfig {
  const { endpoint, opsEndpoint } = options;
  if (endpoint !== undefined && !isEndpointUrl(endpoint.trim())) {
    throw new ConfigurationError(`--endpoint ${ENDPOINT_RULE}`);
  }
  if (opsEndpoint !== undefined && !isEndpointUrl(opsEndpoint.trim())) {
    throw new ConfigurationError(`--ops-endpoint ${OPS_ENDPOINT_RULE}`);
  }
  const config = readEnvironment(ConnectionConfig, {
    ...env,
    // An option given: its variable is not read (nor refused).
    ...(endpoint === undefined ? {} : { VM_FLEET_ENDPOINT: undefined }),
    ...(opsEndpoint === undefined ? {} : { VM_FLEET_OPS_ENDPOINT: undefined }),
  });
  if (endpoint !== undefined) config.endpoint = endpoint.trim();
  if (opsEndpoint !== undefined) config.opsEndpoint = opsEndpoint.trim();
  return config;
}
