import { FleetConfigError, loadFleetConfig, refuseArguments } from './fleet.config';

describe('loadFleetConfig', () => {
  it('keeps state in memory when VM_FLEET_REDIS_URL is unset or empty', () => {
    expect(loadFleetConfig({}).redisUrl).toBeUndefined();
    expect(loadFleetConfig({ VM_FLEET_REDIS_URL: ' ' }).redisUrl).toBeUndefined();
  });

  it('takes a redis:// URL and keeps its password out of what logs show', () => {
    const config = loadFleetConfig({ VM_FLEET_REDIS_URL: 'redis://:s3cret@10.8.0.9:6379/2' });
    expect(config.redisUrl).toBe('redis://:s3cret@10.8.0.9:6379/2');
    expect(config.redisUrlForLogs).toBe('redis://10.8.0.9:6379/2');
  });

  it('keeps a password given in the query (ioredis reads ?password=) out of what logs show', () => {
    const config = loadFleetConfig({
      VM_FLEET_REDIS_URL: 'redis://10.8.0.9:6379/2?password=s3cret&db=2',
    });
    expect(config.redisUrlForLogs).toBe('redis://10.8.0.9:6379/2');
  });

  it.each(['http://10.8.0.9:6379', '10.8.0.9:6379', 'redis://'])(
    'refuses %s, naming the variable but not echoing the value',
    (value) => {
      expect(() => loadFleetConfig({ VM_FLEET_REDIS_URL: value })).toThrow(FleetConfigError);
      expect(() => loadFleetConfig({ VM_FLEET_REDIS_URL: value })).toThrow(
        /^VM_FLEET_REDIS_URL must be/,
      );
    },
  );
});

describe('refuseArguments', () => {
  it('refuses any argument (the port is fixed), pointing at the environment', () => {
    expect(() => refuseArguments(['--port', '8080'])).toThrow(FleetConfigError);
    expect(() => refuseArguments(['--port', '8080'])).toThrow(
      /^service-vm-fleet takes no arguments \(got 2\); configure it with environment variables: VM_FLEET_REDIS_URL/,
    );
    expect(() => refuseArguments([])).not.toThrow();
  });
});
