import { readFileSync } from 'node:fs';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  ListedNode,
  enrolled,
  eventually,
  getJson,
  listedNodes,
  listeningFleetDaemon,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
  untilTime,
} from '../support/daemons';
import { NODE_RECORD_FIELDS } from '../support/heartbeats';

/**
 * The enrollment how-tos, lived with real processes: the built controller on 9203 and agents
 * on 127.0.0.2, 127.0.0.3, ... heartbeating every second (every 5 s where a test bounds a time
 * in intervals).
 */
jest.setTimeout(40_000);

const INTERVAL_S = 1;
/**
 * For the tests that bound a time in heartbeat intervals: long enough that what a busy 2-core
 * machine adds (up to about 2 s to a first heartbeat) is not taken for a missed beat.
 */
const TIMED_INTERVAL_S = 5;

function agentEnv(nodeId: string, wgIp: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: nodeId,
    VM_WG_IP: wgIp,
    VM_HEARTBEAT_INTERVAL_S: String(INTERVAL_S),
    ...extra,
  };
}

function memInfoMb(field: string): number {
  const line = readFileSync('/proc/meminfo', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${field}:`));
  return Math.floor(Number(/(\d+)/.exec(line ?? '')?.[1]) / 1024);
}

async function listed(nodeId: string): Promise<ListedNode | undefined> {
  return (await listedNodes()).find((node) => node.node_id === nodeId);
}

async function waitUntilListed(
  nodeId: string,
  matching?: (node: ListedNode) => boolean,
): Promise<ListedNode> {
  return eventually(
    `${nodeId} in GET /v1/nodes`,
    async () => {
      const node = await listed(nodeId);
      return node && (!matching || matching(node)) ? node : undefined;
    },
    5_000,
  );
}

/** Starts an agent on `wgIp` and waits until the controller lists it. */
function enrolledAgent(
  nodeId: string,
  wgIp: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<Daemon> {
  return enrolled(startAgent(agentEnv(nodeId, wgIp, extra)));
}

/** Each test has a controller of its own, fresh on 9203, and the agents it starts. */
describe('enrollment with real processes', () => {
  let fleet: Daemon;

  beforeEach(async () => {
    fleet = await listeningFleetDaemon();
  });

  afterEach(async () => {
    await stopAllDaemons();
  });

  it('lists three new agents in /v1/nodes and /v1/fleet within one interval, every field right', async () => {
    const interval = { VM_HEARTBEAT_INTERVAL_S: String(TIMED_INTERVAL_S) };
    const specs = [
      { id: 'e2e-node-a', ip: '127.0.0.2', extra: interval },
      { id: 'e2e-node-b', ip: '127.0.0.3', extra: { ...interval, VM_RESERVED: 'true' } },
      { id: 'e2e-node-c', ip: '127.0.0.4', extra: { ...interval, VM_SPAWN_PORT: '9300' } },
    ];
    const agents = specs.map((spec) => startAgent(agentEnv(spec.id, spec.ip, spec.extra)));

    for (const [index, spec] of specs.entries()) {
      // Both times are when the daemons printed the line, however late the test looks.
      const listeningAt = await agents[index].waitForOutput(/listening on/);
      const joinedAt = await fleet.waitForOutput(new RegExp(`node ${spec.id} joined from`));
      expect(joinedAt - listeningAt).toBeLessThanOrEqual(TIMED_INTERVAL_S * 1000);
      const node = await waitUntilListed(spec.id);
      expect(Object.keys(node).sort()).toEqual(NODE_RECORD_FIELDS);
      expect(node).toMatchObject({
        node_id: spec.id,
        wg_ip: spec.ip,
        hostname: readFileSync('/proc/sys/kernel/hostname', 'utf8').trim(),
        vm_count: 0,
        reserved: spec.id === 'e2e-node-b',
      });
      // RAM available as the kernel sees it, give or take what moved since the heartbeat.
      expect(Math.abs(node.ram_available_mb - memInfoMb('MemAvailable'))).toBeLessThan(
        Math.max(512, memInfoMb('MemTotal') * 0.1),
      );
      expect(typeof node.kvm_available).toBe('boolean');
      expect(Date.now() - Date.parse(node.last_heartbeat)).toBeLessThan(
        2 * TIMED_INTERVAL_S * 1000,
      );
    }
    const status = await getJson<{ nodes: ListedNode[]; last_updated: string }>('/v1/fleet');
    expect(status.nodes.map((node) => node.node_id)).toEqual(specs.map((spec) => spec.id));
    expect(Number.isNaN(Date.parse(status.last_updated))).toBe(false);
    for (const agent of agents) expect(agent.alive).toBe(true);
  });

  it('adds a fourth agent to the running fleet without touching the other three', async () => {
    await Promise.all([
      enrolledAgent('e2e-node-a', '127.0.0.2'),
      enrolledAgent('e2e-node-b', '127.0.0.3'),
      enrolledAgent('e2e-node-c', '127.0.0.4'),
    ]);
    const before = await listedNodes();
    await enrolledAgent('e2e-node-d', '127.0.0.5');
    // The others keep beating on their own: each gets a newer heartbeat, nothing else changes.
    for (const old of before) {
      const now = await waitUntilListed(
        old.node_id,
        (node) => node.last_heartbeat > old.last_heartbeat,
      );
      expect({ ...now, last_heartbeat: undefined, ram_available_mb: undefined }).toEqual({
        ...old,
        last_heartbeat: undefined,
        ram_available_mb: undefined,
      });
    }
    expect((await listedNodes()).map((node) => node.node_id)).toEqual([
      'e2e-node-a',
      'e2e-node-b',
      'e2e-node-c',
      'e2e-node-d',
    ]);
  });

  it('lets a second agent with a node id already in use take the record over', async () => {
    await enrolledAgent('e2e-node-d', '127.0.0.5');
    const usurper = await enrolled(
      startAgent(agentEnv('e2e-node-d', '127.0.0.9', { VM_SPAWN_PORT: '9301' })),
    );
    await waitUntilListed('e2e-node-d', (node) => node.wg_ip === '127.0.0.9');
    await fleet.waitForOutput(/node e2e-node-d taken over: now 127\.0\.0\.9/);
    expect(usurper.alive).toBe(true);
    expect((await listedNodes()).filter((node) => node.node_id === 'e2e-node-d')).toHaveLength(1);
    expect(await usurper.stop()).toEqual({ code: 0, signal: null });
    const stoppedAt = Date.now();
    // The first agent, beating on, has the record again with a heartbeat heard after that.
    await waitUntilListed(
      'e2e-node-d',
      (node) => node.wg_ip === '127.0.0.5' && Date.parse(node.last_heartbeat) > stoppedAt,
    );
  });

  it('forgets the fleet when the controller restarts; every agent is back within one interval, none exited', async () => {
    const interval = { VM_HEARTBEAT_INTERVAL_S: String(TIMED_INTERVAL_S) };
    const agents = await Promise.all([
      enrolledAgent('e2e-node-a', '127.0.0.2', interval),
      enrolledAgent('e2e-node-b', '127.0.0.3', interval),
    ]);
    expect(await fleet.stop()).toEqual({ code: 0, signal: null });
    // An agent started while the controller is down keeps running and enrolls once it is up.
    const late = startAgent(agentEnv('e2e-node-late', '127.0.0.6', interval));
    agents.push(late);
    await late.waitForOutput(/heartbeat to .* failed \(ECONNREFUSED/);

    fleet = startFleetDaemon();
    const listeningAt = await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    // Nothing survived the restart: whatever is listed was heard by the new process.
    for (const node of await listedNodes()) {
      expect(Date.parse(node.last_heartbeat)).toBeGreaterThanOrEqual(fleet.startedAt);
    }
    for (const nodeId of ['e2e-node-a', 'e2e-node-b', 'e2e-node-late']) {
      const joinedAt = await fleet.waitForOutput(new RegExp(`node ${nodeId} joined from`));
      // One interval and its +10% jitter, plus what a loaded machine adds.
      expect(joinedAt - listeningAt).toBeLessThanOrEqual(TIMED_INTERVAL_S * 1100 + 2_000);
    }
    expect((await listedNodes()).map((node) => node.node_id)).toEqual([
      'e2e-node-a',
      'e2e-node-b',
      'e2e-node-late',
    ]);
    await late.waitForOutput(/e2e-node-late enrolled: .*after \d+ failed attempt/);
    for (const agent of agents) expect(agent.alive).toBe(true);
  });

  it('keeps a stopped agent listed until 30 s of silence, then drops only it', async () => {
    const [, quiet] = await Promise.all([
      enrolledAgent('e2e-node-a', '127.0.0.2'),
      enrolledAgent('e2e-node-c', '127.0.0.4'),
    ]);
    expect(await quiet.stop()).toEqual({ code: 0, signal: null });
    const atStop = await waitUntilListed('e2e-node-c');

    // Still listed shortly before the 30 s are up (by then no heartbeat can still be on its way)...
    await untilTime(Date.parse(atStop.last_heartbeat) + NODE_STALE_AFTER_MS - 1_000);
    const last = await listed('e2e-node-c');
    expect(last).toBeDefined();
    // ...and gone from a read that starts a millisecond after them.
    await untilTime(Date.parse(last!.last_heartbeat) + NODE_STALE_AFTER_MS + 1);
    expect(await listed('e2e-node-c')).toBeUndefined();
    await fleet.waitForOutput(/node e2e-node-c dropped after 3\d\.\d s without a heartbeat/);
    expect((await listedNodes()).map((node) => node.node_id)).toEqual(['e2e-node-a']);
  }, 60_000);
});

describe('an agent on a bad environment', () => {
  let fleet: Daemon;

  beforeAll(async () => {
    fleet = await listeningFleetDaemon();
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  describe('refuses to start, and the controller never hears of it', () => {
    const base = (id: string) => agentEnv(id, '127.0.0.7');
    const without = (env: NodeJS.ProcessEnv, name: string) => {
      const copy = { ...env };
      delete copy[name];
      return copy;
    };

    it.each<[string, (id: string) => NodeJS.ProcessEnv, RegExp]>([
      [
        'VM_FLEET_ENDPOINT missing',
        (id) => without(base(id), 'VM_FLEET_ENDPOINT'),
        /VM_FLEET_ENDPOINT/,
      ],
      ['VM_NODE_ID missing', (id) => without(base(id), 'VM_NODE_ID'), /VM_NODE_ID/],
      ['VM_WG_IP missing', (id) => without(base(id), 'VM_WG_IP'), /VM_WG_IP/],
      ['all three missing', () => ({}), /VM_FLEET_ENDPOINT, VM_NODE_ID, VM_WG_IP/],
      [
        'VM_HEARTBEAT_INTERVAL_S=0',
        (id) => ({ ...base(id), VM_HEARTBEAT_INTERVAL_S: '0' }),
        /VM_HEARTBEAT_INTERVAL_S/,
      ],
      [
        'VM_HEARTBEAT_INTERVAL_S=abc',
        (id) => ({ ...base(id), VM_HEARTBEAT_INTERVAL_S: 'abc' }),
        /VM_HEARTBEAT_INTERVAL_S/,
      ],
      [
        // Listed for 30 s, gone, listed again: refused, naming the limit and why.
        'VM_HEARTBEAT_INTERVAL_S=45',
        (id) => ({ ...base(id), VM_HEARTBEAT_INTERVAL_S: '45' }),
        /VM_HEARTBEAT_INTERVAL_S must be at most 16 s: the controller drops a node silent for 30 s/,
      ],
      ['VM_SPAWN_PORT=70000', (id) => ({ ...base(id), VM_SPAWN_PORT: '70000' }), /VM_SPAWN_PORT/],
      ['VM_RESERVED=maybe', (id) => ({ ...base(id), VM_RESERVED: 'maybe' }), /VM_RESERVED/],
      [
        'VM_FLEET_ENDPOINT not a URL',
        (id) => ({ ...base(id), VM_FLEET_ENDPOINT: 'fleet:9203' }),
        /VM_FLEET_ENDPOINT/,
      ],
      ['VM_WG_IP not an IP', (id) => ({ ...base(id), VM_WG_IP: 'wg0' }), /VM_WG_IP/],
      [
        'VM_WG_IP not on this host',
        (id) => ({ ...base(id), VM_WG_IP: '192.0.2.1' }),
        /VM_WG_IP 192\.0\.2\.1 is not an address of this host/,
      ],
    ])('%s', async (_case, env, message) => {
      const nodeId = `e2e-bad-${Math.random().toString(36).slice(2, 8)}`;
      const agent = startAgent(env(nodeId));
      const exit = await agent.waitForExit();
      expect(exit.code).not.toBe(0);
      expect(agent.output).toMatch(message);
      expect(agent.output).toContain('configuration error');
      const answer = await fetch(`${FLEET_URL}/v1/nodes/${nodeId}`);
      expect(answer.status).toBe(404);
      expect(fleet.output).not.toContain(nodeId);
    });

    it('refuses CLI flags, saying configuration is by environment', async () => {
      const agent = startAgent(base('e2e-flags'), [
        '--controller',
        FLEET_URL,
        '--node-id',
        'e2e-flags',
      ]);
      expect((await agent.waitForExit()).code).not.toBe(0);
      expect(agent.output).toMatch(/takes no arguments.*environment variables/);
      expect(fleet.output).not.toContain('e2e-flags');
    });
  });
});
