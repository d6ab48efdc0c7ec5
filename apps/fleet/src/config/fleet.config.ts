/** Raised at start-up, naming the variable at fault (never its value: a URL may hold a password). */
export class FleetConfigError extends Error {}

/**
 * The controller's configuration. Its port is fixed by contract; the only setting is where
 * fleet state lives: this process's memory (the documented default) or a shared Redis.
 */
export class FleetConfig {
  /** redis:// or rediss:// URL; unset means in memory. */
  redisUrl?: string;
  /** The same URL as logs show it, without credentials. */
  redisUrlForLogs?: string;
}

export function loadFleetConfig(env: NodeJS.ProcessEnv): FleetConfig {
  const config = new FleetConfig();
  const value = env.VM_FLEET_REDIS_URL?.trim();
  if (!value) return config;
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || !url.hostname) {
    throw new FleetConfigError(
      'VM_FLEET_REDIS_URL must be a redis:// or rediss:// URL such as redis://10.8.0.9:6379/0',
    );
  }
  config.redisUrl = value;
  url.username = '';
  url.password = '';
  config.redisUrlForLogs = url.toString();
  return config;
}
