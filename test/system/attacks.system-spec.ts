import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo, Socket, connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { DAEMON_HTTP_TIMEOUTS } from '@app/daemon';
import {
  Daemon,
  FLEET_URL,
  eventually,
  listedNodes,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Hostile input against the built controller on 9203 and a real agent on 127.0.0.2:9204,
 * heartbeating every second, as an attacker on the fleet network would send it.
 */
jest.setTimeout(30_000);

const AGENT_ID = 'sys-hostile-agent';
const AGENT_IP = '127.0.0.2';
const AGENT_URL = `http://${AGENT_IP}:9204`;
const INTERVAL_MS = 1_000;
const SECRET = 'hunter2-admin-secret';

const diskDir = scratchFolder('hostile-');

function post(url: string, body: string | Buffer, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

const beat = (body: object) => post(`${FLEET_URL}/v1/nodes/heartbeat`, JSON.stringify(body));

/**
 * Opens a connection and sends `head` then one byte of `trickle` every 500 ms, forever; resolves
 * with how long the server kept the connection and what it answered.
 */
function trickle(
  port: number,
  host: string,
  head: string,
  drip: string,
): Promise<{ heldMs: number; answer: string }> {
  return new Promise((resolve) => {
    const openedAt = Date.now();
    let answer = '';
    const socket: Socket = connect(port, host, () => socket.write(head));
    const timer = setInterval(() => socket.write(drip), 500);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ heldMs: Date.now() - openedAt, answer });
    });
  });
}

describe('hostile input with real processes', () => {
  let fleet: Daemon;
  let agent: Daemon;

  beforeAll(async () => {
    fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    agent = startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: AGENT_ID,
      VM_WG_IP: AGENT_IP,
      VM_HEARTBEAT_INTERVAL_S: String(INTERVAL_MS / 1000),
      VM_DISK_DIR: diskDir,
    });
    await eventually(
      'the agent listed',
      async () => (await listedNodes()).find((node) => node.node_id === AGENT_ID),
      10_000,
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  it('answers three 100,000-VM heartbeats at a time with a 4xx in under 1 s, GET /v1/fleet answering throughout', async () => {
    const body = JSON.stringify(
      heartbeat({ node_id: 'flood', vms: Array.from({ length: 100_000 }, () => ({}) as never) }),
    );
    let flooding = true;
    const polls: Array<{ status: number; ms: number }> = [];
    const poller = (async () => {
      while (flooding) {
        const startedAt = Date.now();
        const response = await fetch(`${FLEET_URL}/v1/fleet`);
        await response.arrayBuffer();
        polls.push({ status: response.status, ms: Date.now() - startedAt });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const answers: Array<{ status: number; ms: number; bytes: number }> = [];
    for (let round = 0; round < 5; round++) {
      answers.push(
        ...(await Promise.all(
          [1, 2, 3].map(async () => {
            const startedAt = Date.now();
            const response = await post(`${FLEET_URL}/v1/nodes/heartbeat`, body);
            const text = await response.text();
            return { status: response.status, ms: Date.now() - startedAt, bytes: text.length };
          }),
        )),
      );
    }
    flooding = false;
    await poller;
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.ms).toBeLessThan(1_000);
      expect(answer.bytes).toBeLessThan(16 * 1024);
    }
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.every((poll) => poll.status === 200)).toBe(true);
    expect(Math.max(...polls.map((poll) => poll.ms))).toBeLessThan(1_000);
    expect((await listedNodes()).map((node) => node.node_id)).not.toContain('flood');
  });

  describe('a forged heartbeat aimed at a local service', () => {
    let dummy: Server;
    let dummyPort: number;
    const requests: string[] = [];

    beforeAll(async () => {
      dummy = createServer((req, res) => {
        requests.push(`${req.method} ${req.url}`);
        req.resume();
        res.writeHead(500, { 'content-type': 'text/html' }).end(`<h1>${SECRET}</h1>`);
      });
      await new Promise<void>((resolve) => dummy.listen(0, '127.0.0.1', resolve));
      dummyPort = (dummy.address() as AddressInfo).port;
    });

    afterAll(async () => {
      dummy.closeAllConnections();
      await new Promise((resolve) => dummy.close(resolve));
    });

    it('cannot aim the controller at a path: wg_ip must be an address', async () => {
      const response = await beat(
        heartbeat({ node_id: 'aimed', wg_ip: '127.0.0.1/admin/reset?x=', spawn_port: dummyPort }),
      );
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toContain('wg_ip');
    });

    it("gets a 502 naming the node and the status, never the service's reply, in the answer or the log", async () => {
      expect(
        (await beat(heartbeat({ node_id: 'aimed', wg_ip: '127.0.0.1', spawn_port: dummyPort })))
          .status,
      ).toBe(200);
      const response = await post(
        `${FLEET_URL}/v1/vms`,
        JSON.stringify({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, preferred_node: 'aimed' }),
      );
      const text = await response.text();
      expect(response.status).toBe(502);
      expect(text).not.toContain(SECRET);
      expect(JSON.parse(text)).toMatchObject({
        message: 'agent of node aimed answered 500 (no JSON error message)',
      });
      expect(requests).toEqual(['POST /v1/spawn']);
      await fleet.waitForOutput(/spawn on node aimed failed/);
      expect(fleet.output).not.toContain(SECRET);
    });
  });

  it('writes no line a hostname could forge: the heartbeat is refused, the log stays one line per event', async () => {
    const forged = `evil\n[Nest] 1  - 08/06/2026, 12:00:00 PM     LOG [Nodes] node admin joined from 10.8.0.1`;
    const response = await beat(heartbeat({ node_id: 'n-forge', hostname: forged }));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain('hostname');
    expect(fleet.output).not.toContain('node admin joined');
  });

  it('lets the real agent win back its node within one interval after a far-future stamp with its boot_id', async () => {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const response = await beat(
      heartbeat({
        node_id: AGENT_ID,
        wg_ip: '127.0.0.9',
        hostname: 'forged',
        boot_id: bootId,
        timestamp_utc: '9999-12-31T23:59:59.999999999Z',
      }),
    );
    expect(response.status).toBe(200);
    const forgedAt = Date.now();
    await eventually(
      'the real agent listed again',
      async () =>
        (await listedNodes()).find((node) => node.node_id === AGENT_ID && node.wg_ip === AGENT_IP),
      2 * INTERVAL_MS + 500,
    );
    expect(Date.now() - forgedAt).toBeLessThan(2 * INTERVAL_MS + 500);
    expect(agent.alive).toBe(true);
  });

  it('refuses ?tenant_id[]= and ?tenant_id[key]= with a 400 naming tenant_id', async () => {
    for (const query of ['tenant_id[]=acme', 'tenant_id[a]=b']) {
      const response = await fetch(`${FLEET_URL}/v1/vms?${query}`);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toContain('tenant_id');
    }
  });

  it('answers 415 naming an encoding or a content type neither daemon reads', async () => {
    const json = JSON.stringify(heartbeat({ node_id: 'n-415' }));
    for (const url of [`${FLEET_URL}/v1/nodes/heartbeat`, `${AGENT_URL}/v1/spawn`]) {
      const gzipped = await post(url, gzipSync(json), { 'content-encoding': 'gzip' });
      expect(gzipped.status).toBe(415);
      expect(await gzipped.text()).toContain('Content-Encoding gzip');
      const text = await post(url, json, { 'content-type': 'text/plain' });
      expect(text.status).toBe(415);
      expect(await text.text()).toContain('Content-Type text/plain');
    }
    // curl as the README writes it still goes through.
    const status = execFileSync('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-X',
      'POST',
      '-H',
      'content-type: application/json',
      '-d',
      json,
      `${FLEET_URL}/v1/nodes/heartbeat`,
    ]).toString();
    expect(status).toBe('200');
  });

  it(
    'closes the connection of a client trickling its headers or its body, on both daemons',
    async () => {
      const headers = 'POST /v1/nodes/heartbeat HTTP/1.1\r\nhost: x\r\n';
      const [fleetHeaders, agentHeaders, fleetBody] = await Promise.all([
        trickle(9203, '127.0.0.1', headers, 'x'),
        trickle(9204, AGENT_IP, 'POST /v1/spawn HTTP/1.1\r\nhost: x\r\n', 'x'),
        trickle(
          9203,
          '127.0.0.1',
          `${headers}content-type: application/json\r\ncontent-length: 100000\r\n\r\n{`,
          ' ',
        ),
        // Everyone else is served meanwhile.
        eventually(
          'GET /v1/fleet',
          async () => (await fetch(`${FLEET_URL}/v1/fleet`)).ok || undefined,
          1_000,
        ),
      ]);
      const { headersMs, requestMs, checkEveryMs } = DAEMON_HTTP_TIMEOUTS;
      for (const { heldMs, answer } of [fleetHeaders, agentHeaders]) {
        expect(heldMs).toBeGreaterThanOrEqual(headersMs - 500);
        expect(heldMs).toBeLessThan(headersMs + checkEveryMs + 2_000);
        expect(answer).toMatch(/^HTTP\/1\.1 408/);
      }
      expect(fleetBody.heldMs).toBeGreaterThanOrEqual(requestMs - 500);
      expect(fleetBody.heldMs).toBeLessThan(requestMs + checkEveryMs + 2_000);
      expect(fleetBody.answer).toMatch(/^HTTP\/1\.1 408/);
    },
    DAEMON_HTTP_TIMEOUTS.requestMs + 15_000,
  );
});
