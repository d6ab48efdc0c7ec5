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

  it('has no metrics and text logs when the variables are unset or empty', () => {
    const config = loadFleetConfig({ VM_FLEET_METRICS_ADDR: '', VM_LOG_FORMAT: ' ' });
    expect(config.metricsAddress).toBeUndefined();
    expect(config.logFormat ?? 'text').toBe('text');
  });

  it('takes VM_FLEET_METRICS_ADDR as host:port and VM_LOG_FORMAT json', () => {
    const config = loadFleetConfig({
      VM_FLEET_METRICS_ADDR: '10.8.0.9:9100',
      VM_LOG_FORMAT: 'json',
    });
    expect(config.metricsAddress).toEqual({ host: '10.8.0.9', port: 9100 });
    expect(config.logFormat).toBe('json');
  });

  it.each([
    ['VM_FLEET_METRICS_ADDR', '9100', /^VM_FLEET_METRICS_ADDR must be host:port/],
    ['VM_FLEET_METRICS_ADDR', 'metrics.example:9100', /^VM_FLEET_METRICS_ADDR must be host:port/],
    ['VM_LOG_FORMAT', 'JSON', /^VM_LOG_FORMAT must be text or json$/],
  ])('refuses %s=%s at start-up, naming the variable', (name, value, message) => {
    expect(() => loadFleetConfig({ [name]: value })).toThrow(FleetConfigError);
    expect(() => loadFleetConfig({ [name]: value })).toThrow(message);
  });
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
