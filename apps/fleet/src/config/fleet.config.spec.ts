import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetConfigError } from './fleet.config';
import { loadFleetConfig, refuseArguments } from './fleet-config.load';

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

  it('takes etcd endpoints, comma-separated, as origins', () => {
    expect(loadFleetConfig({}).etcdEndpoints).toBeUndefined();
    expect(
      loadFleetConfig({
        VM_FLEET_ETCD_ENDPOINTS: 'http://10.8.0.5:2379, https://etcd.example.internal:2379/',
      }).etcdEndpoints,
    ).toEqual(['http://10.8.0.5:2379', 'https://etcd.example.internal:2379']);
  });

  it.each([
    'redis://10.8.0.5:2379',
    '10.8.0.5:2379',
    'http://user:pw@10.8.0.5:2379',
    'http://10.8.0.5:2379/v3',
    'http://10.8.0.5:2379?x=1',
    'http://10.8.0.5:2379,,http://10.8.0.6:2379',
    Array.from({ length: 17 }, (_, index) => `http://10.8.0.${index}:2379`).join(','),
  ])('refuses etcd endpoints %s, naming the variable but not echoing the value', (value) => {
    expect(() => loadFleetConfig({ VM_FLEET_ETCD_ENDPOINTS: value })).toThrow(
      /^VM_FLEET_ETCD_ENDPOINTS must be 1 to 16 comma-separated/,
    );
    expect(() => loadFleetConfig({ VM_FLEET_ETCD_ENDPOINTS: value })).not.toThrow(/pw|v3|x=1/);
  });

  it('refuses Redis and etcd together, naming both', () => {
    expect(() =>
      loadFleetConfig({
        VM_FLEET_REDIS_URL: 'redis://10.8.0.9:6379/0',
        VM_FLEET_ETCD_ENDPOINTS: 'http://10.8.0.5:2379',
      }),
    ).toThrow(
      /^VM_FLEET_REDIS_URL and VM_FLEET_ETCD_ENDPOINTS are both set: fleet state lives in one store, set only one$/,
    );
  });

  it('takes an etcd user only with its password, and only beside the endpoints', () => {
    const endpoints = { VM_FLEET_ETCD_ENDPOINTS: 'http://10.8.0.5:2379' };
    const config = loadFleetConfig({
      ...endpoints,
      VM_FLEET_ETCD_USERNAME: 'fleet',
      VM_FLEET_ETCD_PASSWORD: 'pw-0123',
    });
    expect(config).toMatchObject({ etcdUsername: 'fleet', etcdPassword: 'pw-0123' });
    expect(() => loadFleetConfig({ ...endpoints, VM_FLEET_ETCD_USERNAME: 'fleet' })).toThrow(
      /VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD \(or VM_FLEET_ETCD_PASSWORD_FILE\) go together/,
    );
    expect(() =>
      loadFleetConfig({ VM_FLEET_ETCD_USERNAME: 'fleet', VM_FLEET_ETCD_PASSWORD: 'pw-0123' }),
    ).toThrow(/VM_FLEET_ETCD_USERNAME is only taken beside VM_FLEET_ETCD_ENDPOINTS/);
  });

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

  it('serves the operations listener on 127.0.0.1:9206 unless VM_FLEET_OPS_ADDR moves it or is off', () => {
    expect(loadFleetConfig({}).opsListenAddress).toEqual({ host: '127.0.0.1', port: 9206 });
    expect(loadFleetConfig({ VM_FLEET_OPS_ADDR: ' ' }).opsListenAddress).toEqual({
      host: '127.0.0.1',
      port: 9206,
    });
    expect(loadFleetConfig({ VM_FLEET_OPS_ADDR: '[::1]:9300' }).opsListenAddress).toEqual({
      host: '::1',
      port: 9300,
    });
    expect(loadFleetConfig({ VM_FLEET_OPS_ADDR: 'off' }).opsListenAddress).toBeUndefined();
  });

  it.each([
    ['VM_FLEET_OPS_ADDR', '0.0.0.0:9206', /^VM_FLEET_OPS_ADDR must be off or host:port/],
    ['VM_FLEET_OPS_ADDR', 'no', /^VM_FLEET_OPS_ADDR must be off or host:port/],
    ['VM_FLEET_METRICS_ADDR', '9100', /^VM_FLEET_METRICS_ADDR must be host:port/],
    ['VM_FLEET_METRICS_ADDR', 'metrics.example:9100', /^VM_FLEET_METRICS_ADDR must be host:port/],
    ['VM_LOG_FORMAT', 'JSON', /^VM_LOG_FORMAT must be text or json$/],
  ])('refuses %s=%s at start-up, naming the variable', (name, value, message) => {
    expect(() => loadFleetConfig({ [name]: value })).toThrow(FleetConfigError);
    expect(() => loadFleetConfig({ [name]: value })).toThrow(message);
  });
});

describe('loadFleetConfig: the node secret (per-node tokens)', () => {
  const SECRET = 'fleet-secret-0123456789abcdef0123456789';
  const PREVIOUS = 'fleet-secret-previous-fedcba9876543210ab';
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'ppn-node-secret-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function secretFile(name: string, content: string, mode = 0o600): string {
    const path = join(dir, name);
    writeFileSync(path, `${content}\n`, { mode });
    chmodSync(path, mode);
    return path;
  }

  it('takes the etcd password from VM_FLEET_ETCD_PASSWORD_FILE', () => {
    const config = loadFleetConfig({
      VM_FLEET_ETCD_ENDPOINTS: 'http://10.8.0.5:2379',
      VM_FLEET_ETCD_USERNAME: 'fleet',
      VM_FLEET_ETCD_PASSWORD_FILE: secretFile('etcd-password', 'pw-from-file'),
    });
    expect(config.etcdPassword).toBe('pw-from-file');
  });

  it('takes etcd TLS files only with https:// endpoints, the certificate with its key', () => {
    const ca = secretFile('ca.pem', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----');
    const key = secretFile(
      'key.pem',
      '-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----',
    );
    const https = { VM_FLEET_ETCD_ENDPOINTS: 'https://10.8.0.5:2379' };
    const config = loadFleetConfig({
      ...https,
      VM_FLEET_ETCD_CA_FILE: ca,
      VM_FLEET_ETCD_CERT_FILE: ca,
      VM_FLEET_ETCD_KEY_FILE: key,
    });
    expect(config.etcdCa).toContain('BEGIN CERTIFICATE');
    expect(config.etcdCert).toContain('BEGIN CERTIFICATE');
    expect(config.etcdKey).toContain('BEGIN PRIVATE KEY');
    expect(() => loadFleetConfig({ ...https, VM_FLEET_ETCD_CERT_FILE: ca })).toThrow(
      /VM_FLEET_ETCD_CERT_FILE and VM_FLEET_ETCD_KEY \(or VM_FLEET_ETCD_KEY_FILE\) go together/,
    );
    expect(() =>
      loadFleetConfig({
        VM_FLEET_ETCD_ENDPOINTS: 'http://10.8.0.5:2379',
        VM_FLEET_ETCD_CA_FILE: ca,
      }),
    ).toThrow(/need VM_FLEET_ETCD_ENDPOINTS of https:\/\/ URLs only/);
    expect(() => loadFleetConfig({ ...https, VM_FLEET_ETCD_CA_FILE: key })).toThrow(
      `VM_FLEET_ETCD_CA_FILE ${key} cannot be used: it holds no PEM certificate`,
    );
    expect(() => loadFleetConfig({ ...https, VM_FLEET_ETCD_CA_FILE: '/nonexistent.pem' })).toThrow(
      'VM_FLEET_ETCD_CA_FILE /nonexistent.pem cannot be used: it cannot be read (ENOENT)',
    );
    expect(() =>
      loadFleetConfig({ ...https, VM_FLEET_ETCD_CERT_FILE: ca, VM_FLEET_ETCD_KEY_FILE: ca }),
    ).toThrow(
      /^VM_FLEET_ETCD_KEY must be a PEM private key .*\(read from VM_FLEET_ETCD_KEY_FILE\)$/,
    );
  });

  it('takes VM_FLEET_NODE_SECRET directly or from VM_FLEET_NODE_SECRET_FILE', () => {
    expect(loadFleetConfig({ VM_FLEET_NODE_SECRET: SECRET }).nodeSecret).toBe(SECRET);
    const fromFile = loadFleetConfig({ VM_FLEET_NODE_SECRET_FILE: secretFile('secret', SECRET) });
    expect(fromFile.nodeSecret).toBe(SECRET);
    expect(loadFleetConfig({}).nodeSecret).toBeUndefined();
  });

  it.each([
    [{ VM_FLEET_NODE_SECRET: 'a'.repeat(31) }, /^VM_FLEET_NODE_SECRET must be 32 to 1024 /],
    [{ VM_FLEET_NODE_SECRET_PREVIOUS: 'a'.repeat(31) }, /VM_FLEET_NODE_SECRET_PREVIOUS must be 32/],
    [
      { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_NODE_SECRET_FILE: '/nonexistent' },
      /set VM_FLEET_NODE_SECRET or VM_FLEET_NODE_SECRET_FILE, not both/,
    ],
    [
      { VM_FLEET_NODE_SECRET_PREVIOUS: PREVIOUS },
      /^VM_FLEET_NODE_SECRET_PREVIOUS is only taken beside VM_FLEET_NODE_SECRET/,
    ],
    [
      { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_NODE_SECRET_PREVIOUS: SECRET },
      /^VM_FLEET_NODE_SECRET_PREVIOUS must differ from VM_FLEET_NODE_SECRET$/,
    ],
    [
      { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_NODE_TOKEN: SECRET },
      /^VM_FLEET_NODE_TOKEN must differ from VM_FLEET_NODE_SECRET: the secret is never a token$/,
    ],
    [
      { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_API_TOKEN: SECRET },
      /^VM_FLEET_API_TOKEN must differ from VM_FLEET_NODE_SECRET/,
    ],
    [
      {
        VM_FLEET_NODE_SECRET: SECRET,
        VM_FLEET_NODE_SECRET_PREVIOUS: PREVIOUS,
        VM_FLEET_API_TOKEN: PREVIOUS,
      },
      /^VM_FLEET_API_TOKEN must differ from VM_FLEET_NODE_SECRET_PREVIOUS/,
    ],
  ])('refuses %o at start-up, naming the variable, never the value', (env, message) => {
    expect(() => loadFleetConfig(env)).toThrow(FleetConfigError);
    expect(() => loadFleetConfig(env)).toThrow(message);
    let thrown = '';
    try {
      loadFleetConfig(env);
    } catch (error) {
      thrown = (error as Error).message;
    }
    expect(thrown).not.toContain(SECRET);
    expect(thrown).not.toContain(PREVIOUS);
    expect(thrown).not.toContain('a'.repeat(31));
  });

  it('refuses a secret file group or others can read', () => {
    expect(() =>
      loadFleetConfig({ VM_FLEET_NODE_SECRET_FILE: secretFile('open', SECRET, 0o644) }),
    ).toThrow(
      'VM_FLEET_NODE_SECRET_FILE names a file that cannot be used: it is readable by group or others (mode 0644); chmod 600 it',
    );
  });

  it('takes the shared token beside the secret (a migration) and a previous secret (a rotation)', () => {
    const config = loadFleetConfig({
      VM_FLEET_NODE_SECRET: SECRET,
      VM_FLEET_NODE_SECRET_PREVIOUS_FILE: secretFile('previous', PREVIOUS),
      VM_FLEET_NODE_TOKEN: 'shared-node-token-4c2e9a71',
    });
    expect(config).toMatchObject({
      nodeSecret: SECRET,
      previousNodeSecret: PREVIOUS,
      nodeToken: 'shared-node-token-4c2e9a71',
    });
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
