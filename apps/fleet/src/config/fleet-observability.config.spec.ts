import { FleetConfigError, loadFleetConfig } from './fleet.config';

describe('loadFleetConfig: metrics and log format', () => {
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
