import { isUnicastAddress } from '@app/fleet-domain';
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
      fleetEndpoints: ['http://10.8.0.9:9203'],
      fleetEndpointsForLogs: ['http://10.8.0.9:9203'],
      fleetEndpointForLogs: 'http://10.8.0.9:9203',
      nodeId: 'compute-west-01',
      wgIp: '10.8.0.21',
      heartbeatIntervalS: 10,
      spawnPort: 9204,
      reserved: false,
      diskDir: '/var/lib/vm-fleet',
      diskRetentionS: 86_400,
      baseImage: undefined,
      sshPubkey: undefined,
      vcpuOvercommit: 4,
      diskOvercommit: 1,
      accel: 'auto',
      failpoint: undefined,
      kvmDevice: undefined,
      backupDir: undefined,
      backupEveryS: 86_400,
      backupKeepLast: 3,
      backupKeepDaily: 7,
      backupKeepWeekly: 4,
      copyMaxMbps: 40,
      routingMesh: true,
    });
  });

  it('turns the routing mesh off with VM_ROUTING_MESH=0 and refuses another word', () => {
    expect(loadVmHostConfig({ ...required, VM_ROUTING_MESH: '0' }).routingMesh).toBe(false);
    expect(errorOf({ ...required, VM_ROUTING_MESH: 'off' })).toContain(
      'VM_ROUTING_MESH must be true, false, 1 or 0',
    );
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
    ['VM_ACCEL', 'hvf'],
    ['VM_ACCEL', 'KVM-please'],
    ['VM_BACKUP_DIR', 'mnt/usb'],
    ['VM_BACKUP_DIR', '/mnt/usb/../../etc'],
    ['VM_BACKUP_EVERY_S', '45'],
    ['VM_BACKUP_EVERY_S', '2592001'],
    ['VM_BACKUP_EVERY_S', '1h'],
    ['VM_BACKUP_KEEP_LAST', 'none'],
    ['VM_BACKUP_KEEP_DAILY', '1001'],
    ['VM_BACKUP_KEEP_WEEKLY', '-1'],
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

  it.each(['auto', 'kvm', 'tcg'] as const)('takes VM_ACCEL=%s', (accel) => {
    expect(loadVmHostConfig({ ...required, VM_ACCEL: accel }).accel).toBe(accel);
  });

  it('takes a backup folder, its schedule (0: only when asked) and its retention', () => {
    const config = loadVmHostConfig({
      ...required,
      VM_BACKUP_DIR: '/mnt/usb/vm-backups',
      VM_BACKUP_EVERY_S: '0',
      VM_BACKUP_KEEP_LAST: '1',
      VM_BACKUP_KEEP_DAILY: '0',
      VM_BACKUP_KEEP_WEEKLY: '52',
    });
    expect(config).toMatchObject({
      backupDir: '/mnt/usb/vm-backups',
      backupEveryS: 0,
      backupKeepLast: 1,
      backupKeepDaily: 0,
      backupKeepWeekly: 52,
    });
    expect(errorOf({ ...required, VM_BACKUP_EVERY_S: '30' })).toContain(
      'VM_BACKUP_EVERY_S must be 0 (backups only when asked) or a whole number of seconds from 60',
    );
  });

  it('says which values VM_ACCEL takes', () => {
    expect(errorOf({ ...required, VM_ACCEL: 'xen' })).toContain(
      'VM_ACCEL must be one of auto, kvm, tcg',
    );
  });

  it('keeps credentials in the endpoint out of what logs show', () => {
    const config = loadVmHostConfig({
      ...required,
      VM_FLEET_ENDPOINT: 'https://ops:s3cret@fleet:9203',
    });
    expect(config.fleetEndpoints).toEqual(['https://ops:s3cret@fleet:9203']);
    expect(config.fleetEndpointForLogs).toBe('https://fleet:9203');
  });

  it('takes several controllers separated by commas, in order, each shown without credentials', () => {
    const config = loadVmHostConfig({
      ...required,
      VM_FLEET_ENDPOINT: ' http://10.8.0.9:9203/ ,https://ops:s3cret@10.8.0.10:9203',
    });
    expect(config.fleetEndpoints).toEqual([
      'http://10.8.0.9:9203',
      'https://ops:s3cret@10.8.0.10:9203',
    ]);
    expect(config.fleetEndpointForLogs).toBe('http://10.8.0.9:9203, https://10.8.0.10:9203');
  });

  it.each([
    [
      'http://10.8.0.9:9203,ftp://ops:s3cret@10.8.0.10:9203?token=x',
      'VM_FLEET_ENDPOINT entry 2 of 2 ("ftp://10.8.0.10:9203") must be an http(s) URL',
    ],
    ['http://10.8.0.9:9203,,http://10.8.0.10:9203', 'VM_FLEET_ENDPOINT entry 2 of 3 is empty'],
    ['http://a:9203,http://a:9203/', 'VM_FLEET_ENDPOINT names one controller twice'],
    [
      Array.from({ length: 9 }, (_, i) => `http://10.8.0.${i + 1}:9203`).join(','),
      'VM_FLEET_ENDPOINT names 9 controllers; at most 8',
    ],
  ])('refuses the endpoint list %s naming the variable and the bad entry', (value, expected) => {
    const message = errorOf({ ...required, VM_FLEET_ENDPOINT: value });
    expect(message).toContain(expected);
    expect(message).not.toContain('s3cret');
    expect(message).not.toContain('token=x');
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
      fleetEndpoints: ['https://fleet.example:9203'],
      wgIp: 'fd00::21',
      heartbeatIntervalS: 1,
      spawnPort: 65535,
    });
  });

  it('has no metrics and text logs when the variables are unset', () => {
    const config = loadVmHostConfig(required);
    expect(config.metricsAddress).toBeUndefined();
    expect(config.logFormat ?? 'text').toBe('text');
  });

  it('takes VM_METRICS_ADDR as host:port and VM_LOG_FORMAT json', () => {
    const config = loadVmHostConfig({
      ...required,
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
    expect(() => loadVmHostConfig({ ...required, [name]: value })).toThrow(VmHostConfigError);
    expect(() => loadVmHostConfig({ ...required, [name]: value })).toThrow(message);
  });
});

describe('VM_HEARTBEAT_INTERVAL_S keeps the node listed', () => {
  it('takes up to 16 s', () => {
    expect(
      loadVmHostConfig({ ...required, VM_HEARTBEAT_INTERVAL_S: '16' }).heartbeatIntervalS,
    ).toBe(16);
  });

  it.each(['17', '45', '600'])(
    'refuses %s s at start-up, naming the variable, the limit and why',
    (value) => {
      expect(errorOf({ ...required, VM_HEARTBEAT_INTERVAL_S: value })).toBe(
        'VM_HEARTBEAT_INTERVAL_S must be at most 16 s: the controller drops a node silent for 30 s, and a longer interval (beats up to 10% late, a request up to 5 s, 2 s to read the VMs) could leave it silent that long',
      );
    },
  );
});

describe('refuseArguments', () => {
  it('refuses any CLI argument, pointing at the environment', () => {
    expect(() => refuseArguments(['--controller', 'http://x'])).toThrow(/environment variables/);
    expect(() => refuseArguments([])).not.toThrow();
  });
});

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

describe('VM_DISK_OVERCOMMIT', () => {
  it('is 1 (no thin provisioning) unless set', () => {
    expect(loadVmHostConfig(required).diskOvercommit).toBe(1);
    expect(loadVmHostConfig({ ...required, VM_DISK_OVERCOMMIT: '2.5' }).diskOvercommit).toBe(2.5);
    expect(loadVmHostConfig({ ...required, VM_DISK_OVERCOMMIT: '100' }).diskOvercommit).toBe(100);
  });

  it.each(['0', '0.5', '-1', 'two', '1e2', '101', '1.505'])(
    'refuses VM_DISK_OVERCOMMIT=%s, naming it',
    (value) => {
      expect(errorOf({ ...required, VM_DISK_OVERCOMMIT: value })).toBe(
        "VM_DISK_OVERCOMMIT must be a ratio of VM disks' virtual sizes to the disk room, from 1 (no thin provisioning) to 100 (e.g. 1.5)",
      );
    },
  );
});

describe('VM_DISK_RETENTION_S', () => {
  it("keeps a deleted VM's disk a day unless set; 0 removes it at once, 30 days at most", () => {
    expect(loadVmHostConfig(required).diskRetentionS).toBe(86_400);
    for (const [value, seconds] of [
      ['0', 0],
      ['600', 600],
      ['2592000', 2_592_000],
    ] as const) {
      expect(loadVmHostConfig({ ...required, VM_DISK_RETENTION_S: value }).diskRetentionS).toBe(
        seconds,
      );
    }
  });

  it.each(['-1', '1.5', '1e3', '01', 'forever', '2592001', '999999999'])(
    'refuses VM_DISK_RETENTION_S=%s, naming it',
    (value) => {
      expect(errorOf({ ...required, VM_DISK_RETENTION_S: value })).toBe(
        'VM_DISK_RETENTION_S must be a whole number of seconds from 0 (remove at once) to 2592000 (30 days)',
      );
    },
  );
});

describe('VM_RESERVED_HOST_PORTS', () => {
  it('is none unless set; takes TCP ports separated by commas', () => {
    expect(loadVmHostConfig(required).reservedHostPorts).toBeUndefined();
    expect(
      loadVmHostConfig({ ...required, VM_RESERVED_HOST_PORTS: '9300, 9301,9300' })
        .reservedHostPorts,
    ).toEqual([9300, 9301]);
  });

  it.each(['0', '65536', '9300;9301', '9300,', '93OO', Array(65).fill('9300').join(',')])(
    'refuses VM_RESERVED_HOST_PORTS=%s, naming it',
    (value) => {
      expect(errorOf({ ...required, VM_RESERVED_HOST_PORTS: value })).toBe(
        'VM_RESERVED_HOST_PORTS must be TCP port numbers from 1 to 65535 separated by commas (e.g. 9300,9301), at most 64',
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
      'VM_HOST_FAILPOINT must be one of before-sidecar, after-sidecar, after-disk',
    );
  });
});

describe('VM_HOST_KVM_DEVICE (test-only)', () => {
  it('is unset unless given, and must be an absolute path', () => {
    expect(loadVmHostConfig(required).kvmDevice).toBeUndefined();
    expect(loadVmHostConfig({ ...required, VM_HOST_KVM_DEVICE: '/tmp/t/kvm' }).kvmDevice).toBe(
      '/tmp/t/kvm',
    );
    expect(loadVmHostConfig({ ...required, VM_HOST_KVM_DEVICE: '' }).kvmDevice).toBeUndefined();
    expect(errorOf({ ...required, VM_HOST_KVM_DEVICE: 'kvm' })).toBe(
      'VM_HOST_KVM_DEVICE must be an absolute path',
    );
  });
});
