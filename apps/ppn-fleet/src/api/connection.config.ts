import { ValidateBy } from 'class-validator';
import {
  ConfigurationError,
  EnvironmentVariable,
  IsBearerToken,
  readEnvironment,
} from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';

export const DEFAULT_ENDPOINT = `http://127.0.0.1:${FLEET_PORT}`;

const ENDPOINT_RULE =
  'must be an http(s) URL of the controller such as http://<fleet-controller-host>:9203';

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

  @EnvironmentVariable('VM_FLEET_API_TOKEN', { secret: true, validate: IsBearerToken() })
  apiToken?: string;
}

/**
 * The connection for one run: `--endpoint` (when given) over VM_FLEET_ENDPOINT over the
 * default. Throws ConfigurationError naming the option or variable at fault, never a value.
 */
export function readConnection(env: NodeJS.ProcessEnv, endpointOption?: string): ConnectionConfig {
  if (endpointOption !== undefined && !isEndpointUrl(endpointOption.trim())) {
    throw new ConfigurationError(`--endpoint ${ENDPOINT_RULE}`);
  }
  const config = readEnvironment(
    ConnectionConfig,
    endpointOption === undefined ? env : { ...env, VM_FLEET_ENDPOINT: undefined },
  );
  if (endpointOption !== undefined) config.endpoint = endpointOption.trim();
  return config;
}
