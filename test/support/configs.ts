import { declaredVariables } from '@app/daemon';
import { FleetConfig } from '../../apps/fleet/src/config/fleet.config';
import { loadFleetConfig } from '../../apps/fleet/src/config/fleet-config.load';
import { VmHostConfig, loadVmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';

/**
 * The configurations a spec needs, read from an environment by the same reader as production
 * (`loadVmHostConfig`, `loadFleetConfig`): every setting a spec leaves out has its documented
 * default, and a value the daemon would refuse fails here, naming its variable, instead of a
 * hand-built config failing later for another reason.
 */

/** The agent's three required variables, for a node that no spec reaches over the network. */
const AGENT_REQUIRED = {
  VM_FLEET_ENDPOINT: 'http://127.0.0.1:9',
  VM_NODE_ID: 'node-a',
  VM_WG_IP: '127.0.0.1',
};

/** Names only variables the class declares: a misspelt one would be ignored silently. */
function declared(configClass: new () => object, env: Record<string, string>): void {
  const names = declaredVariables(configClass).flatMap(({ name, secret }) =>
    secret ? [name, `${name}_FILE`] : [name],
  );
  const unknown = Object.keys(env).filter((name) => !names.includes(name));
  if (unknown.length > 0) {
    throw new Error(`${configClass.name} declares no ${unknown.join(', ')}`);
  }
}

/** The agent's configuration: `env` over the required variables (node `node-a`). */
export function vmHostConfig(env: Record<string, string> = {}): VmHostConfig {
  declared(VmHostConfig, env);
  return loadVmHostConfig({ ...AGENT_REQUIRED, ...env });
}

/** The controller's configuration: `env` alone (nothing is required). */
export function fleetConfig(env: Record<string, string> = {}): FleetConfig {
  declared(FleetConfig, env);
  return loadFleetConfig(env);
}
