import { VmHostConfigError, isUnicastAddress, loadVmHostConfig } from './vm-host.config';

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

describe('VM_WG_IP is a unicast address', () => {
  it.each([
    '0.0.0.0',
    '0.1.2.3',
    '::',
    '0:0:0:0:0:0:0:0',
    '::ffff:0.0.0.0',
    '224.0.0.1',
    '239.255.255.250',
    '::ffff:e000:1',
    'ff02::1',
    'FF05::2',
    '255.255.255.255',
  ])('refuses %s, naming VM_WG_IP and what it must be', (address) => {
    expect(isUnicastAddress(address)).toBe(false);
    expect(errorOf({ ...required, VM_WG_IP: address })).toBe(
      'VM_WG_IP must be a unicast IPv4 or IPv6 address of this host (not 0.0.0.0, ::, multicast or broadcast)',
    );
  });

  it.each(['10.8.0.21', '127.0.0.2', '192.168.1.255', 'fd00::21', '::1', 'fe80::1'])(
    'accepts %s',
    (address) => {
      expect(isUnicastAddress(address)).toBe(true);
      expect(loadVmHostConfig({ ...required, VM_WG_IP: address }).wgIp).toBe(address);
    },
  );
});

describe('VM_VCPU_OVERCOMMIT', () => {
  it('is 4 vCPUs per core unless set', () => {
    expect(loadVmHostConfig(required).vcpuOvercommit).toBe(4);
    expect(loadVmHostConfig({ ...required, VM_VCPU_OVERCOMMIT: '1.5' }).vcpuOvercommit).toBe(1.5);
    expect(loadVmHostConfig({ ...required, VM_VCPU_OVERCOMMIT: '0.5' }).vcpuOvercommit).toBe(0.5);
  });

  it.each(['0', '0.0', '-1', 'four', '1e3', '1000', '2.505'])(
    'refuses VM_VCPU_OVERCOMMIT=%s, naming it',
    (value) => {
      expect(errorOf({ ...required, VM_VCPU_OVERCOMMIT: value })).toBe(
        'VM_VCPU_OVERCOMMIT must be a number of vCPUs per logical core, from 0.01 to 999 (e.g. 4 or 1.5)',
      );
    },
  );
});

describe('VM_HOST_FAILPOINT (test-only)', () => {
  it('is unset unless given, and must name a provisioning step', () => {
    expect(loadVmHostConfig(required).failpoint).toBeUndefined();
    expect(loadVmHostConfig({ ...required, VM_HOST_FAILPOINT: 'after-disk' }).failpoint).toBe(
      'after-disk',
    );
    expect(errorOf({ ...required, VM_HOST_FAILPOINT: 'sometimes' })).toContain(
      'VM_HOST_FAILPOINT must be one of after-sidecar, after-disk',
    );
  });
});
