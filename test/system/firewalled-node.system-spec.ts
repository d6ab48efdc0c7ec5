import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { AGENT_CONNECT_TIMEOUT_MS } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  OUTPUT_TIMEOUT_MS,
  enrolled,
  eventually,
  listedNodes,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * A node behind a firewall that drops its spawn port: it heartbeats fine and reports the most
 * free RAM, but a SYN to its address is never answered (no refusal, no ICMP). The built
 * controller gives up on the connection after its connect timeout, well before the request's
 * 10 s, and, since nothing reached that agent, tries the healthy node: every create is a 201
 * there, none slow. The black hole is a route to an address through a test host (a network
 * namespace) that does not forward: what it is sent vanishes.
 */
jest.setTimeout(120_000);

const HEALTHY = 'healthy-node';
const FIREWALLED = 'firewalled-node';
/** Routed into the test host, which drops it: a SYN to it is never answered. */
const BLACKHOLED_WG_IP = '10.202.31.9';
/** The bound on a create while such a node is in the fleet. */
const CREATE_BOUND_MS = 15_000;
/** How long placement first passes over a node whose dispatch failed (docs/api.md). */
const FIRST_BACKOFF_MS = 5_000;
const FIREWALLED_BEAT_EVERY_MS = 2_000;
const FIREWALLED_RAM_TOTAL_MB = 2 * 1024 * 1024;

const workDir = scratchFolder('firewalled-node-');
const baseImage = join(workDir, 'base.qcow2');

function runningGuests(): string[] {
  const guests = liveQemusUnder(workDir).map(({ args }) => args[args.indexOf('-name') + 1]);
  return [...new Set(guests)].sort();
}

interface Created {
  status: number;
  ms: number;
  body: { vm_id?: string; node_id?: string; message?: string };
}

async function create(): Promise<Created> {
  const started = performance.now();
  const response = await fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ vm_type: 'firewalled', ram_mb: 64, vcpu_count: 1 }),
  });
  const body = (await response.json()) as Created['body'];
  return { status: response.status, ms: performance.now() - started, body };
}

async function firewalledBeat(): Promise<number> {
  const response = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      heartbeat({
        node_id: FIREWALLED,
        hostname: 'firewalled-host',
        wg_ip: BLACKHOLED_WG_IP,
        ram_total_mb: FIREWALLED_RAM_TOTAL_MB,
        ram_used_mb: 0,
        timestamp_utc: new Date().toISOString(),
      }),
    ),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('a node whose spawn port a firewall drops (SYN unanswered)', () => {
  let fleet: Daemon;
  let host: TestHost;
  let beating: NodeJS.Timeout | undefined;

  beforeAll(async () => {
    host = TestHost.create('ppn-drop', 31);
    execFileSync('ip', ['route', 'add', `${BLACKHOLED_WG_IP}/32`, 'via', host.address]);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    fleet = await listeningFleetDaemon();
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: HEALTHY,
        VM_WG_IP: '127.0.0.5',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, HEALTHY),
        VM_BASE_IMAGE: baseImage,
      }),
    );
    expect(await firewalledBeat()).toBe(200);
    beating = setInterval(
      () => void firewalledBeat().catch(() => undefined),
      FIREWALLED_BEAT_EVERY_MS,
    );
  });

  afterAll(async () => {
    clearInterval(beating);
    await stopAllDaemons();
    // Deleting the namespace takes its veth, and the route through it, with it.
    host?.remove();
  });

  it('really drops: a connection to its spawn port gets no answer at all', () => {
    const started = performance.now();
    let code = 0;
    try {
      execFileSync('curl', ['-s', '-m', '1', `http://${BLACKHOLED_WG_IP}:9204/`]);
    } catch (error) {
      code = (error as { status: number }).status;
    }
    expect(code).toBe(28); // curl: operation timed out (not refused, not unreachable)
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
  });

  it(`places 5 creates in a row on the healthy node, each a 201 within ${CREATE_BOUND_MS / 1000} s`, async () => {
    const nodes = await listedNodes();
    const free = (id: string) => nodes.find((node) => node.node_id === id)?.ram_available_mb;
    expect(free(FIREWALLED)).toBeGreaterThan(free(HEALTHY) ?? Infinity);

    const created: Created[] = [];
    for (let i = 0; i < 5; i++) {
      created.push(await create());
      // Past the first failure's backoff, the firewalled node is chosen, and given up on, again.
      if (i === 0) await new Promise((resolve) => setTimeout(resolve, FIRST_BACKOFF_MS + 500));
    }

    expect(created.map(({ status }) => status)).toEqual([201, 201, 201, 201, 201]);
    expect(created.map(({ body }) => body.node_id)).toEqual(Array(5).fill(HEALTHY));
    for (const { ms } of created) expect(ms).toBeLessThan(CREATE_BOUND_MS);
    // The first went to the firewalled node first, and waited out the connect timeout alone.
    expect(created[0].ms).toBeGreaterThanOrEqual(AGENT_CONNECT_TIMEOUT_MS - 100);
    expect(created[0].ms).toBeLessThan(AGENT_CONNECT_TIMEOUT_MS + 5_000);
    const failovers = fleet.output.match(
      new RegExp(`node ${FIREWALLED} failed \\(unreachable\\); trying the next best node`, 'g'),
    );
    expect(failovers?.length).toBeGreaterThanOrEqual(2);
    expect(fleet.output).toContain(`ECONNECT_TIMEOUT: no connection within`);
    await eventually(
      'the five guests running',
      () => Promise.resolve(runningGuests().length === 5 ? true : undefined),
      OUTPUT_TIMEOUT_MS,
    );
    expect(runningGuests()).toEqual(created.map(({ body }) => `guest=${body.vm_id}`).sort());
    // Its trouble is its spawn port, not its liveness: it is still listed.
    expect((await listedNodes()).map(({ node_id }) => node_id)).toContain(FIREWALLED);
  });
});
