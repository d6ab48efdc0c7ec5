import { VmHostConfigError, loadVmHostConfig } from './vm-host.config';

const REQUIRED = {
  VM_FLEET_ENDPOINT: 'http://10.8.0.1:9203',
  VM_NODE_ID: 'node-a',
  VM_WG_IP: '10.8.0.21',
};

describe('loadVmHostConfig: metrics and log format', () => {
  it('has no metrics and text logs when the variables are unset', () => {
    const config = loadVmHostConfig(REQUIRED);
    expect(config.metricsAddress).toBeUndefined();
    expect(config.logFormat ?? 'text').toBe('text');
  });

  it('takes VM_METRICS_ADDR as host:port and VM_LOG_FORMAT json', () => {
    const config = loadVmHostConfig({
      ...REQUIRED,
      VM_METRICS_ADDR: '[fd00::21]:9101',
      VM_LOG_FORMAT: 'json',
    });
    expect(config.metricsAddress).toEqual({ host: 'fd00::21', port: 9101 });
    expect(config.logFormat).toBe('json');
  });

  it.each([
    ['VM_METRICS_ADDR', '10.8.0.21', /VM_METRICS_ADDR must be host:port/],
    ['VM_METRICS_ADDR', '10.8.0.21:70000', /VM_METRICS_ADDR must be host:port/],
    ['VM_LOG_FORMAT', 'logfmt', /VM_LOG_FORMAT must be text or json/],
  ])('refuses %s=%s at start-up, naming the variable', (name, value, message) => {
    expect(() => loadVmHostConfig({ ...REQUIRED, [name]: value })).toThrow(VmHostConfigError);
    expect(() => loadVmHostConfig({ ...REQUIRED, [name]: value })).toThrow(message);
  });
});
