/** The controller's configuration read at start: FleetConfig, then what no single setting can check (settings that go together, files the settings name). */
import { readFileSync } from 'node:fs';
import {
  ConfigurationError,
  readEnvironment,
  refuseArguments as refuseDaemonArguments,
} from '@app/daemon';
import { TenantQuota, parseTenantQuotas, recoverAfterProblem } from '@app/fleet-domain';
import { FleetConfig } from './fleet.config';

export function loadFleetConfig(env: NodeJS.ProcessEnv): FleetConfig {
  const config = readEnvironment(FleetConfig, env);
  const recoverProblem = recoverAfterProblem(config.fenceAfterS, config.recoverAfterS);
  if (recoverProblem) throw new ConfigurationError(recoverProblem);
  if (config.nodeToken && config.nodeToken === config.apiToken) {
    // Then every agent, which holds the node token, could act as an operator.
    throw new ConfigurationError('VM_FLEET_API_TOKEN must differ from VM_FLEET_NODE_TOKEN');
  }
  refuseSecretMisuse(config);
  refuseStoreMisuse(config);
  refuseTenantMisuse(config);
  if (config.tenantQuotasFile !== undefined) {
    config.tenantQuotas = readTenantQuotas(config.tenantQuotasFile);
  }
  if (config.redisUrl) {
    const url = new URL(config.redisUrl);
    url.username = '';
    url.password = '';
    // ioredis also reads ?password= (and more) from the query: logs and 503s show none of it.
    url.search = '';
    config.redisUrlForLogs = url.toString();
  }
  return config;
}

/** One shared store at a time; etcd credentials come in pairs. */
function refuseStoreMisuse(config: FleetConfig): void {
  const problems: string[] = [];
  if (config.redisUrl !== undefined && config.etcdEndpoints !== undefined) {
    problems.push(
      'VM_FLEET_REDIS_URL and VM_FLEET_ETCD_ENDPOINTS are both set: fleet state lives in one store, set only one',
    );
  }
  if ((config.etcdUsername === undefined) !== (config.etcdPassword === undefined)) {
    problems.push(
      'VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD (or VM_FLEET_ETCD_PASSWORD_FILE) go together',
    );
  }
  if (config.etcdUsername !== undefined && config.etcdEndpoints === undefined) {
    problems.push('VM_FLEET_ETCD_USERNAME is only taken beside VM_FLEET_ETCD_ENDPOINTS');
  }
  if ((config.etcdCertFile === undefined) !== (config.etcdKey === undefined)) {
    problems.push(
      'VM_FLEET_ETCD_CERT_FILE and VM_FLEET_ETCD_KEY (or VM_FLEET_ETCD_KEY_FILE) go together',
    );
  }
  const tls = config.etcdCaFile !== undefined || config.etcdCertFile !== undefined;
  if (tls && !config.etcdEndpoints?.every((endpoint) => endpoint.startsWith('https:'))) {
    problems.push(
      'VM_FLEET_ETCD_CA_FILE and VM_FLEET_ETCD_CERT_FILE need VM_FLEET_ETCD_ENDPOINTS of https:// URLs only',
    );
  }
  if (problems.length > 0) throw new ConfigurationError(problems.join('; '));
  if (config.etcdCaFile !== undefined) {
    config.etcdCa = readPemFile('VM_FLEET_ETCD_CA_FILE', config.etcdCaFile);
  }
  if (config.etcdCertFile !== undefined) {
    config.etcdCert = readPemFile('VM_FLEET_ETCD_CERT_FILE', config.etcdCertFile);
  }
}

/** Largest certificate file read: a chain of a few certificates stays far below. */
const MAX_PEM_FILE_BYTES = 256 * 1024;

/** A file of PEM certificates, read and checked at start. */
function readPemFile(variable: string, path: string): string {
  const fault = (problem: string) =>
    new ConfigurationError(`${variable} ${path} cannot be used: ${problem}`);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw fault(`it cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (bytes.length > MAX_PEM_FILE_BYTES)
    throw fault(`it holds more than ${MAX_PEM_FILE_BYTES} bytes`);
  const text = bytes.toString('utf8');
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw fault('it holds no PEM certificate');
  return text;
}

/**
 * The node secret is a key, never a token: no token may be it (else whoever holds that token
 * could derive every node's), and the previous secret only makes sense beside a new one.
 */
function refuseSecretMisuse(config: FleetConfig): void {
  const problems: string[] = [];
  if (config.previousNodeSecret !== undefined) {
    if (config.nodeSecret === undefined) {
      problems.push(
        'VM_FLEET_NODE_SECRET_PREVIOUS is only taken beside VM_FLEET_NODE_SECRET (the new secret)',
      );
    } else if (config.previousNodeSecret === config.nodeSecret) {
      problems.push('VM_FLEET_NODE_SECRET_PREVIOUS must differ from VM_FLEET_NODE_SECRET');
    }
  }
  const secrets = [
    ['VM_FLEET_NODE_SECRET', config.nodeSecret],
    ['VM_FLEET_NODE_SECRET_PREVIOUS', config.previousNodeSecret],
  ] as const;
  const tokens = [
    ['VM_FLEET_NODE_TOKEN', config.nodeToken],
    ['VM_FLEET_API_TOKEN', config.apiToken],
  ] as const;
  for (const [tokenName, token] of tokens) {
    for (const [secretName, secret] of secrets) {
      if (token !== undefined && token === secret) {
        problems.push(`${tokenName} must differ from ${secretName}: the secret is never a token`);
      }
    }
  }
  if (problems.length > 0) throw new ConfigurationError(problems.join('; '));
}

/** Largest quotas file read: far beyond MAX_TENANTS entries of four limits. */
const MAX_QUOTAS_FILE_BYTES = 4 * 1024 * 1024;

/**
 * VM_FLEET_TENANT_QUOTAS_FILE read and checked: one ConfigurationError naming every bad entry
 * (see parseTenantQuotas), or the file's problem, so a controller never starts with a quota it
 * misread.
 */
export function readTenantQuotas(path: string): Map<string, TenantQuota> {
  const fault = (problem: string) =>
    new ConfigurationError(`VM_FLEET_TENANT_QUOTAS_FILE ${path} cannot be used: ${problem}`);
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_QUOTAS_FILE_BYTES) {
      throw fault(`it holds more than ${MAX_QUOTAS_FILE_BYTES} bytes`);
    }
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    throw fault(`it cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw fault(`it is not JSON (${(error as Error).message})`);
  }
  const { quotas, problems } = parseTenantQuotas(value);
  if (problems.length > 0) throw fault(problems.join('; '));
  return quotas;
}

/**
 * Tenant tokens only close anything beside the API token (without it every route is open to
 * anyone), and only for the tenants the quotas file names; the secret is a key, never a token.
 */
function refuseTenantMisuse(config: FleetConfig): void {
  if (config.tenantSecret === undefined) return;
  const problems: string[] = [];
  if (config.apiToken === undefined) {
    problems.push(
      'VM_FLEET_TENANT_SECRET needs VM_FLEET_API_TOKEN: without the API token every route is open to anyone, so tenant tokens would confine no one',
    );
  }
  if (config.tenantQuotasFile === undefined) {
    problems.push(
      'VM_FLEET_TENANT_SECRET needs VM_FLEET_TENANT_QUOTAS_FILE: its entries are the tenants whose tokens are taken ({} for a tenant without limits)',
    );
  }
  const others = [
    ['VM_FLEET_API_TOKEN', config.apiToken],
    ['VM_FLEET_NODE_TOKEN', config.nodeToken],
    ['VM_FLEET_NODE_SECRET', config.nodeSecret],
    ['VM_FLEET_NODE_SECRET_PREVIOUS', config.previousNodeSecret],
  ] as const;
  for (const [name, value] of others) {
    if (value !== undefined && value === config.tenantSecret) {
      problems.push(`VM_FLEET_TENANT_SECRET must differ from ${name}`);
    }
  }
  if (problems.length > 0) throw new ConfigurationError(problems.join('; '));
}

/** The controller takes no flags (its port is fixed): every argument is refused. */
export function refuseArguments(args: readonly string[]): void {
  refuseDaemonArguments('service-vm-fleet', args, FleetConfig);
}
