import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveNodeToken } from '@app/daemon';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { liveQemusUnder } from '../support/qemu-processes';
import { RedisServer } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Per-node tokens with real processes: the built controller with VM_FLEET_NODE_SECRET and built
 * agents, each holding its own node's token (node A's printed by the built `ppn-fleet
 * node-token`, so the CLI and the controller are shown to agree), enroll and place a real QEMU
 * VM; no node's token speaks for another node or opens another's agent. Then the two windows a
 * running fleet goes through without dropping out: the move from the shared token, and the
 * rotation of the secret; in each, every agent is called with the very token it heartbeats with.
 */
jest.setTimeout(60_000);

const SECRET = 'fleet-node-secret-5b7d9f1a3c0e2468ace0b2d4';
const NEW_SECRET = 'fleet-node-secret-rotated-8e6c4a2019f7d5b3';
const SHARED = 'shared-node-token-1f3e5d7c9b0a2468';
const API_TOKEN = 'api-token-0d2f4b6a8c1e3579';

const A = { nodeId: 'node-a', wgIp: '127.0.0.2' };
const B = { nodeId: 'node-b', wgIp: '127.0.0.3' };
const C = { nodeId: 'node-c', wgIp: '127.0.0.4' };

// Its QEMU processes are killed and it is removed after the file, also when a test fails.
const workDir = scratchFolder('node-identity-');

function secretFile(name: string, content: string): string {
  const path = join(workDir, name);
  writeFileSync(path, `${content}\n`, { mode: 0o600 });
  return path;
}

const CLI_MAIN = join(__dirname, '../../dist/apps/ppn-fleet/apps/ppn-fleet/src/main.js');

/**
 * `ppn-fleet node-token <node_id> > <file>` as the README has an operator run it, the built CLI
 * reading the secret from `secretPath`: the file its stdout went to.
 */
function nodeTokenFromCli(nodeId: string, secretPath: string, file: string): string {
  const printed = execFileSync(process.execPath, [CLI_MAIN, 'node-token', nodeId], {
    env: { PATH: process.env.PATH, TMPDIR: tmpdir(), VM_FLEET_NODE_SECRET_FILE: secretPath },
    encoding: 'utf8',
  });
  expect(printed).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
  const path = join(workDir, file);
  writeFileSync(path, printed, { mode: 0o600 });
  return path;
}

function qemuPids(): number[] {
  return liveQemusUnder(workDir).map(({ pid }) => pid);
}

interface Listed {
  vm_id: string;
  node_id: string;
  hostname: string;
  state: string;
}

async function call<T = { message: string; vm_id: string; node_id: string }>(
  url: string,
  token: string | undefined,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: T; challenge: string | null }> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text ? JSON.parse(text) : undefined) as T,
    challenge: response.headers.get('www-authenticate'),
  };
}

const agentUrl = (node: { wgIp: string }): string => `http://${node.wgIp}:9204`;

/** A built agent for `node`, heartbeating every second with `token` from a file. */
function agentFor(node: { nodeId: string; wgIp: string }, token: string, file: string): Daemon {
  return agentWithTokenFile(node, secretFile(file, token));
}

/** A built agent for `node`, heartbeating every second with the token in `tokenPath`. */
function agentWithTokenFile(node: { nodeId: string; wgIp: string }, tokenPath: string): Daemon {
  return startAgent({
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: node.nodeId,
    VM_WG_IP: node.wgIp,
    VM_HEARTBEAT_INTERVAL_S: '1',
    VM_DISK_DIR: join(workDir, node.nodeId),
    VM_FLEET_NODE_TOKEN_FILE: tokenPath,
  });
}

async function startFleet(env: NodeJS.ProcessEnv): Promise<Daemon> {
  const fleet = startFleetDaemon({ VM_FLEET_API_TOKEN: API_TOKEN, ...env });
  await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  return fleet;
}

async function listedIds(): Promise<string[]> {
  const nodes = await call<Listed[]>(`${FLEET_URL}/v1/nodes`, API_TOKEN);
  return nodes.body.map((node) => node.node_id);
}

function untilListed(...nodeIds: string[]): Promise<true> {
  return eventually(
    `${nodeIds.join(', ')} listed`,
    async () => ((await listedIds()).join() === nodeIds.join() ? true : undefined),
    10_000,
  );
}

/** Creates a VM on `nodeId` through the controller and waits until it runs. */
async function createRunningVm(nodeId: string): Promise<string> {
  const created = await call(`${FLEET_URL}/v1/vms`, API_TOKEN, {
    method: 'POST',
    body: { vm_type: 'identity', ram_mb: 64, vcpu_count: 1, preferred_node: nodeId },
  });
  expect({ status: created.status, node: created.body.node_id }).toEqual({
    status: 201,
    node: nodeId,
  });
  const vmId = created.body.vm_id;
  await eventually(
    `${vmId} Running`,
    async () => {
      const vms = await call<Listed[]>(`${FLEET_URL}/v1/vms`, API_TOKEN);
      return vms.body.find((vm) => vm.vm_id === vmId)?.state === 'Running' ? true : undefined;
    },
    10_000,
  );
  return vmId;
}

async function deleteVm(vmId: string): Promise<void> {
  const before = qemuPids();
  expect((await call(`${FLEET_URL}/v1/vms/${vmId}`, API_TOKEN, { method: 'DELETE' })).status).toBe(
    204,
  );
  await eventually(
    'its QEMU gone',
    () => Promise.resolve(qemuPids().length < before.length ? true : undefined),
    10_000,
  );
}

function heartbeatAs(nodeId: string, token: string, wgIp = '127.0.0.9') {
  return call(`${FLEET_URL}/v1/nodes/heartbeat`, token, {
    method: 'POST',
    body: heartbeat({ node_id: nodeId, wg_ip: wgIp, hostname: 'thief' }),
  });
}

describe('with VM_FLEET_NODE_SECRET, each node speaks only for itself', () => {
  const tokenA = deriveNodeToken(SECRET, A.nodeId);
  const tokenB = deriveNodeToken(SECRET, B.nodeId);
  let fleet: Daemon;
  let agentA: Daemon;
  let agentB: Daemon;

  beforeAll(async () => {
    const secretPath = secretFile('node-secret', SECRET);
    fleet = await startFleet({ VM_FLEET_NODE_SECRET_FILE: secretPath });
    // A's token as an operator makes it: printed by the built CLI into a file.
    agentA = agentWithTokenFile(A, nodeTokenFromCli(A.nodeId, secretPath, 'token-a'));
    agentB = agentFor(B, tokenB, 'token-b');
  });

  afterAll(() => stopAllDaemons());

  it("enrolls node A by A's token, and refuses A's token (and the secret) for node B", async () => {
    await untilListed(A.nodeId, B.nodeId);
    for (const token of [tokenA, SECRET, SHARED]) {
      const refused = await heartbeatAs(B.nodeId, token);
      expect(refused.status).toBe(401);
      expect(refused.challenge).toBe('Bearer realm="service-vm-fleet", error="invalid_token"');
      expect(refused.body.message).toMatch(/^the bearer token does not belong to node node-b: /);
      expect(JSON.stringify(refused.body)).not.toContain(token);
    }
    // The secret is no token for node A either.
    expect((await heartbeatAs(A.nodeId, SECRET)).status).toBe(401);
    const b = await call<Listed>(`${FLEET_URL}/v1/nodes/${B.nodeId}`, API_TOKEN);
    expect(b.body.hostname).not.toBe('thief');
  });

  it("sends a create placed on A to A's agent with A's token, which B's token does not open", async () => {
    const vmId = await createRunningVm(A.nodeId);
    expect(qemuPids()).toHaveLength(1);

    for (const token of [tokenB, SECRET, API_TOKEN]) {
      const list = await call(`${agentUrl(A)}/v1/vms`, token);
      expect(list.status).toBe(401);
      expect(list.challenge).toMatch(/^Bearer realm="service-vm-host", error="invalid_token"/);
      const destroy = await call(`${agentUrl(A)}/v1/vms/${vmId}`, token, { method: 'DELETE' });
      expect(destroy.status).toBe(401);
      const spawn = await call(`${agentUrl(A)}/v1/spawn`, token, {
        method: 'POST',
        body: { vm_type: 'identity', ram_mb: 64, vcpu_count: 1 },
      });
      expect(spawn.status).toBe(401);
    }
    // B's own agent is no way into A's either: it takes B's token, not A's.
    expect((await call(`${agentUrl(B)}/v1/vms`, tokenA)).status).toBe(401);
    const onA = await call<Listed[]>(`${agentUrl(A)}/v1/vms`, tokenA);
    expect(onA.body.map((vm) => vm.vm_id)).toEqual([vmId]);
    expect(qemuPids()).toHaveLength(1);

    await deleteVm(vmId);
  });

  it('never prints the secret or a token', async () => {
    await Promise.all([fleet.stop(), agentA.stop(), agentB.stop()]);
    for (const daemon of [fleet, agentA, agentB]) {
      for (const secret of [SECRET, tokenA, tokenB]) expect(daemon.output).not.toContain(secret);
      expect(daemon.output).not.toContain('API open');
    }
    expect(fleet.output).toMatch(/node node-a joined/);
  });
});

describe('a running fleet moving from the shared token, then rotating the secret', () => {
  afterAll(() => stopAllDaemons());

  it('keeps every node through the move: shared and own tokens both taken until the shared one goes', async () => {
    // Before: the shared token everywhere.
    let fleet = await startFleet({ VM_FLEET_NODE_TOKEN: SHARED });
    const agentA = agentFor(A, SHARED, 'move-a-shared');
    const agentC = agentFor(C, SHARED, 'move-c-shared');
    await untilListed(A.nodeId, C.nodeId);

    // 1. The controller gets the secret beside the shared token.
    await fleet.stop();
    const secretPath = secretFile('move-secret', SECRET);
    fleet = await startFleet({
      VM_FLEET_NODE_TOKEN: SHARED,
      VM_FLEET_NODE_SECRET_FILE: secretPath,
    });
    await fleet.waitForOutput(/WARN .*migrating to per-node tokens/);
    await untilListed(A.nodeId, C.nodeId);
    await fleet.waitForOutput(/node node-c heartbeats with the shared VM_FLEET_NODE_TOKEN/);

    // 2. Node A gets its own token (from the CLI); C still holds the shared one. Both take VMs,
    // each called with the token it heartbeats with: no 401, no node passed over.
    await agentA.stop();
    const ownA = await enrolled(
      agentWithTokenFile(A, nodeTokenFromCli(A.nodeId, secretPath, 'move-a-own')),
    );
    await untilListed(A.nodeId, C.nodeId);
    await deleteVm(await createRunningVm(C.nodeId));
    await deleteVm(await createRunningVm(A.nodeId));
    expect(fleet.output).not.toMatch(/answered 401|not called|failed \(failed\)/);
    await fleet.waitForOutput(/node node-a now heartbeats with its own token/);
    expect(fleet.output).not.toMatch(/node node-\w dropped/);

    // 3. The shared token goes: C, which never got its own, drops out; A stays.
    await fleet.stop();
    fleet = await startFleet({ VM_FLEET_NODE_SECRET_FILE: secretFile('move-secret-2', SECRET) });
    await untilListed(A.nodeId);
    expect((await heartbeatAs(B.nodeId, SHARED)).status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await listedIds()).toEqual([A.nodeId]);
    expect(fleet.output).not.toContain('migrating');

    await Promise.all([fleet.stop(), ownA.stop(), agentC.stop()]);
    for (const daemon of [fleet, ownA, agentC]) {
      for (const secret of [SECRET, SHARED]) expect(daemon.output).not.toContain(secret);
    }
  });

  it("keeps every node through a rotation: each node's old token taken for it alone until it has its new one", async () => {
    const oldA = deriveNodeToken(SECRET, A.nodeId);
    const oldB = deriveNodeToken(SECRET, B.nodeId);
    let fleet = await startFleet({ VM_FLEET_NODE_SECRET_FILE: secretFile('rot-old', SECRET) });
    const agentA = agentFor(A, oldA, 'rot-a-old');
    const agentB = agentFor(B, oldB, 'rot-b-old');
    await untilListed(A.nodeId, B.nodeId);

    // 1. The new secret, the old one beside it as the previous.
    await fleet.stop();
    fleet = await startFleet({
      VM_FLEET_NODE_SECRET_FILE: secretFile('rot-new', NEW_SECRET),
      VM_FLEET_NODE_SECRET_PREVIOUS_FILE: secretFile('rot-previous', SECRET),
    });
    await fleet.waitForOutput(/WARN .*rotating the node secret/);
    await untilListed(A.nodeId, B.nodeId);
    // An old token is still its own node's only.
    expect((await heartbeatAs(B.nodeId, oldA)).status).toBe(401);
    expect((await heartbeatAs(B.nodeId, NEW_SECRET)).status).toBe(401);
    expect((await heartbeatAs(B.nodeId, SECRET)).status).toBe(401);
    // A's agent still holds its old token, and is called with that one, the one it heartbeats
    // with (never its new one, which it does not hold yet).
    await deleteVm(await createRunningVm(A.nodeId));

    // 2. Node A gets its token under the new secret; B does not.
    await agentA.stop();
    const newA = await enrolled(agentFor(A, deriveNodeToken(NEW_SECRET, A.nodeId), 'rot-a-new'));
    await untilListed(A.nodeId, B.nodeId);
    await deleteVm(await createRunningVm(A.nodeId));
    await deleteVm(await createRunningVm(B.nodeId));
    expect(fleet.output).not.toMatch(/answered 401|not called|failed \(failed\)/);
    expect(fleet.output).not.toMatch(/node node-\w dropped/);

    // 3. The previous secret goes: B, never given its new token, is refused and absent.
    await fleet.stop();
    fleet = await startFleet({ VM_FLEET_NODE_SECRET_FILE: secretFile('rot-new-2', NEW_SECRET) });
    await untilListed(A.nodeId);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await listedIds()).toEqual([A.nodeId]);
    expect((await heartbeatAs(A.nodeId, oldA)).status).toBe(401);

    await Promise.all([fleet.stop(), newA.stop(), agentB.stop()]);
    for (const daemon of [fleet, newA, agentB]) {
      for (const secret of [SECRET, NEW_SECRET, oldA, oldB]) {
        expect(daemon.output).not.toContain(secret);
      }
    }
  });
});

describe('with VM_FLEET_NODE_SECRET and fleet state in Redis', () => {
  let redis: RedisServer;

  beforeAll(async () => {
    redis = await RedisServer.start();
  });

  afterAll(async () => {
    await stopAllDaemons();
    await redis.stop();
  });

  // The tokens are derived, never stored; only the kind each node heartbeated with is, with its
  // state, so a create right after a restart reaches the agent with the token it holds.
  it('needs nothing more: the tokens are derived, not stored, and hold across a restart', async () => {
    const env = {
      VM_FLEET_REDIS_URL: redis.url,
      VM_FLEET_NODE_SECRET_FILE: secretFile('redis-secret', SECRET),
    };
    let fleet = await startFleet(env);
    await fleet.waitForOutput(/Redis at .* connected/);
    const agentA = agentFor(A, deriveNodeToken(SECRET, A.nodeId), 'redis-a');
    await untilListed(A.nodeId);
    expect((await heartbeatAs(A.nodeId, deriveNodeToken(SECRET, B.nodeId))).status).toBe(401);

    await fleet.stop();
    fleet = await startFleet(env);
    await fleet.waitForOutput(/Redis at .* connected/);
    expect(await listedIds()).toEqual([A.nodeId]);
    await deleteVm(await createRunningVm(A.nodeId));
    await Promise.all([fleet.stop(), agentA.stop()]);
    expect(fleet.output).not.toContain(SECRET);
  });
});

describe('start-up', () => {
  afterAll(() => stopAllDaemons());

  it.each([
    [
      'a secret of 31 characters',
      { VM_FLEET_NODE_SECRET: 'x'.repeat(31) },
      'VM_FLEET_NODE_SECRET must be 32 to 1024 characters',
    ],
    [
      'the node token equal to the secret',
      { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_NODE_TOKEN: SECRET },
      'VM_FLEET_NODE_TOKEN must differ from VM_FLEET_NODE_SECRET',
    ],
    [
      'a previous secret without a secret',
      { VM_FLEET_NODE_SECRET_PREVIOUS: SECRET },
      'VM_FLEET_NODE_SECRET_PREVIOUS is only taken beside VM_FLEET_NODE_SECRET',
    ],
  ])(
    'service-vm-fleet with %s exits 2, naming it, never the value',
    async (_what, env, message) => {
      const fleet = startFleetDaemon(env);
      expect(await fleet.waitForExit()).toEqual({ code: 2, signal: null });
      expect(fleet.output).toContain(`service-vm-fleet: configuration error: `);
      expect(fleet.output).toContain(message);
      expect(fleet.output).not.toContain(SECRET);
      expect(fleet.output).not.toContain('x'.repeat(31));
    },
  );
});
