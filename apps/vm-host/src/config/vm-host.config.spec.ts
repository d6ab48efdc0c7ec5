import { VmHostConfigError, loadVmHostConfig, refuseArguments } from './vm-host.config';

const required = {
  VM_FLEET_ENDPOINT: 'http://10.8.0.9:9203',
  VM_NODE_ID: 'compute-west-01',
  VM_WG_IP: '10.8.0.21',
};

function errorOf(env: NodeJS.ProcessEnv): string {
  try {
    loadVmHostConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(VmHostConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a configuration error');
}

describe('loadVmHostConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadVmHostConfig(required)).toEqual({
      fleetEndpoint: 'http://10.8.0.9:9203',
      fleetEndpointForLogs: 'http://10.8.0.9:9203',
      nodeId: 'compute-west-01',
      wgIp: '10.8.0.21',
      heartbeatIntervalS: 10,
      spawnPort: 9204,
      reserved: false,
      diskDir: '/var/lib/vm-fleet',
      baseImage: undefined,
      sshPubkey: undefined,
      vcpuOvercommit: 4,
      failpoint: undefined,
    });
  });

  it('names every missing required variable in one message', () => {
    expect(errorOf({})).toBe(
      'missing required environment variable(s): VM_FLEET_ENDPOINT, VM_NODE_ID, VM_WG_IP',
    );
    expect(errorOf({ ...required, VM_NODE_ID: '  ' })).toBe(
      'missing required environment variable(s): VM_NODE_ID',
    );
  });

  it('names missing and invalid variables together', () => {
    const message = errorOf({ VM_NODE_ID: 'n1', VM_SPAWN_PORT: '0' });
    expect(message).toContain('VM_FLEET_ENDPOINT, VM_WG_IP');
    expect(message).toContain('VM_SPAWN_PORT');
  });

  it.each([
    ['VM_FLEET_ENDPOINT', 'ftp://10.8.0.9:9203'],
    ['VM_FLEET_ENDPOINT', '10.8.0.9:9203'],
    ['VM_NODE_ID', '../etc'],
    ['VM_WG_IP', '10.8.0.300'],
    ['VM_WG_IP', 'wg0'],
    ['VM_HEARTBEAT_INTERVAL_S', '0'],
    ['VM_HEARTBEAT_INTERVAL_S', '-5'],
    ['VM_HEARTBEAT_INTERVAL_S', '2.5'],
    ['VM_HEARTBEAT_INTERVAL_S', 'ten'],
    ['VM_SPAWN_PORT', '0'],
    ['VM_SPAWN_PORT', '65536'],
    ['VM_SPAWN_PORT', '92o4'],
    ['VM_RESERVED', 'yes'],
    ['VM_RESERVED', '2'],
    ['VM_DISK_DIR', 'relative/dir'],
  ])('refuses %s=%s, naming the variable but not echoing the value', (name, value) => {
    const message = errorOf({ ...required, [name]: value });
    expect(message).toContain(name);
    expect(message).not.toContain(value);
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['false', false],
    ['False', false],
    ['0', false],
  ])('reads VM_RESERVED=%s as %s', (value, reserved) => {
    expect(loadVmHostConfig({ ...required, VM_RESERVED: value }).reserved).toBe(reserved);
  });

  it('keeps credentials in the endpoint out of what logs show', () => {
    const config = loadVmHostConfig({
      ...required,
      VM_FLEET_ENDPOINT: 'https://ops:s3cret@fleet:9203',
    });
    expect(config.fleetEndpoint).toBe('https://ops:s3cret@fleet:9203');
    expect(config.fleetEndpointForLogs).toBe('https://fleet:9203');
  });

  it('takes overrides of the optional variables', () => {
    const config = loadVmHostConfig({
      ...required,
      VM_FLEET_ENDPOINT: 'https://fleet.example:9203/',
      VM_WG_IP: 'fd00::21',
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_SPAWN_PORT: '65535',
    });
    expect(config).toMatchObject({
      fleetEndpoint: 'https://fleet.example:9203',
      wgIp: 'fd00::21',
      heartbeatIntervalS: 1,
      spawnPort: 65535,
    });
  });
});

describe('refuseArguments', () => {
  it('refuses any CLI argument, pointing at the environment', () => {
    expect(() => refuseArguments(['--controller', 'http://x'])).toThrow(/environment variables/);
    expect(() => refuseArguments([])).not.toThrow();
  });
});
