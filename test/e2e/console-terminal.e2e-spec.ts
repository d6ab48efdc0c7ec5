import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import request from 'supertest';
import {
  CLOSE_POLICY,
  WebSocketConnection,
  deriveTenantToken,
  WebSocketRefusedError,
  acceptUpgrade,
  openWebSocket,
  refuseUpgrade,
} from '@app/daemon';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The interactive console's WebSocket on the operations listener, in-process, with a small
 * agent of its own answering the upgrade: who may open it (a session and its CSRF token from
 * this listener's own page, or the API token), and what it relays.
 */

const API_TOKEN = 'api-token-1a7f3c9e5b0d2864';
const TENANT_SECRET = 'tenant-secret-7c1e4b9a0d3f6285e1a4c7b0d9f3e628';
const ACME = deriveTenantToken(TENANT_SECRET, 'acme');
const GLOBEX = deriveTenantToken(TENANT_SECRET, 'globex');

/** An agent that answers GET /v1/vms/vm-a/terminal with an echo, and 409 for vm-busy. */
class TerminalAgent {
  readonly server: Server = createServer((_req, res) => res.writeHead(404).end());
  readonly upgrades: IncomingMessage[] = [];
  readonly open = new Set<WebSocketConnection>();

  async start(): Promise<this> {
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.upgrades.push(req);
      if (req.url === '/v1/vms/vm-busy/terminal') {
        return refuseUpgrade(
          socket,
          409,
          'vm vm-busy: its serial console is in use by another session',
        );
      }
      if (req.url === '/v1/vms/vm-hostile/terminal') {
        return refuseUpgrade(socket, 409, '\u001b]52;c;aGk=\u0007 rm -rf / <script>');
      }
      const ws = acceptUpgrade(req, socket, head);
      this.open.add(ws);
      ws.onClose(() => this.open.delete(ws));
      ws.onMessage((data) => ws.send(Buffer.from(`echo:${data.toString()}`)));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function sessionOf(setCookie: string[] | string | undefined): string {
  const header = ([] as string[]).concat(setCookie ?? []).find((line) => line.startsWith('ppn_'));
  if (header === undefined) throw new Error('no session cookie was set');
  return header.split(';')[0];
}

describe('the interactive console (WebSocket) on the operations listener', () => {
  let fleet: RunningFleet;
  let agent: TerminalAgent;
  let host: string;
  let cookie: string;
  let csrf: string;

  let auditLog: string;

  beforeEach(async () => {
    const folder = scratchFolder('ppn-console-terminal-');
    const quotas = join(folder, 'quotas.json');
    writeFileSync(quotas, JSON.stringify({ acme: {}, globex: {} }));
    auditLog = join(folder, 'audit.log');
    fleet = await startFleet({
      ops: true,
      env: {
        VM_FLEET_API_TOKEN: API_TOKEN,
        VM_FLEET_TENANT_SECRET: TENANT_SECRET,
        VM_FLEET_TENANT_QUOTAS_FILE: quotas,
        VM_FLEET_AUDIT_LOG: auditLog,
      },
    });
    agent = await new TerminalAgent().start();
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'n1',
          vms: [
            vmRecord('vm-a', { tenant_id: 'acme' }),
            vmRecord('vm-busy'),
            vmRecord('vm-hostile'),
          ],
          spawn_port: agent.port,
        }),
      )
      .expect(200);
    host = new URL(fleet.opsUrl).host;
    const login = await request(fleet.opsUrl).post('/login').send({ token: API_TOKEN }).expect(200);
    cookie = sessionOf(login.headers['set-cookie']);
    const page = await request(fleet.opsUrl).get('/vms/vm-a').set('Cookie', cookie).expect(200);
    csrf = /<meta name="csrf-token" content="([^"]+)" \/>/.exec(page.text)![1];
  });

  afterEach(async () => {
    await agent.stop();
    await fleet.close();
  });

  /** Opens the page's door as a browser of `origin` would, with what is given. */
  function openPage(path: string, headers: Record<string, string>): Promise<WebSocketConnection> {
    return openWebSocket({ url: new URL(path, fleet.opsUrl), timeoutMs: 5_000, headers });
  }

  const browser = (): Record<string, string> => ({
    Origin: `http://${host}`,
    Cookie: cookie,
    'Sec-WebSocket-Protocol': `ppn-terminal, csrf.${csrf}`,
  });

  async function refusalOf(opening: Promise<WebSocketConnection>): Promise<WebSocketRefusedError> {
    try {
      const ws = await opening;
      ws.close();
    } catch (error) {
      if (error instanceof WebSocketRefusedError) return error;
      throw error;
    }
    throw new Error('the WebSocket was opened');
  }

  it("relays keys to the VM's agent with the node's credential and its output back", async () => {
    const ws = await openPage('/console/vms/vm-a/terminal', browser());
    const echoed = new Promise<string>((resolve) =>
      ws.onMessage((data) => resolve(data.toString())),
    );
    ws.send(Buffer.from('\r'));
    expect(await echoed).toBe('echo:\r');
    expect(agent.upgrades.at(-1)?.url).toBe('/v1/vms/vm-a/terminal');
    // The page's session and CSRF token stay on the controller; the agent gets none of them.
    expect(agent.upgrades.at(-1)?.headers.cookie).toBeUndefined();
    expect(agent.upgrades.at(-1)?.headers['sec-websocket-protocol']).toBeUndefined();
    // Closing the page closes the agent's side: the serial port is free again.
    const agentClosed = new Promise<void>((resolve) => [...agent.open][0].onClose(() => resolve()));
    ws.close();
    await agentClosed;
    expect(agent.open.size).toBe(0);
  });

  it('refuses the page door without a session, from another site, without the CSRF token, or by another name', async () => {
    const { Cookie: _cookie, ...noSession } = browser();
    expect(await refusalOf(openPage('/console/vms/vm-a/terminal', noSession))).toMatchObject({
      status: 401,
    });
    const crossSite = { ...browser(), Origin: 'http://evil.example' };
    expect(await refusalOf(openPage('/console/vms/vm-a/terminal', crossSite))).toMatchObject({
      status: 403,
      refusal: 'refused: this request came from another site',
    });
    const fetchSite = { ...browser(), 'Sec-Fetch-Site': 'cross-site' };
    expect(await refusalOf(openPage('/console/vms/vm-a/terminal', fetchSite))).toMatchObject({
      status: 403,
    });
    const { Origin: _origin, ...noOrigin } = browser();
    expect(await refusalOf(openPage('/console/vms/vm-a/terminal', noOrigin))).toMatchObject({
      status: 403,
    });
    const noCsrf = { ...browser(), 'Sec-WebSocket-Protocol': 'ppn-terminal' };
    expect(await refusalOf(openPage('/console/vms/vm-a/terminal', noCsrf))).toMatchObject({
      status: 403,
    });
    const rebound = { ...browser(), Host: 'rebound.example', Origin: 'http://rebound.example' };
    expect(await refusalOf(openPage('/console/vms/vm-a/terminal', rebound))).toMatchObject({
      status: 421,
    });
    // None of them reached the agent.
    expect(agent.upgrades).toHaveLength(0);
  });

  it("takes the API token at the CLI's door, and refuses it without", async () => {
    expect(await refusalOf(openPage('/v1/vms/vm-a/terminal', {}))).toMatchObject({ status: 401 });
    expect(
      await refusalOf(
        openPage('/v1/vms/vm-a/terminal', { Authorization: 'Bearer wrong-token-0000' }),
      ),
    ).toMatchObject({ status: 401 });
    const crossSite = { Authorization: `Bearer ${API_TOKEN}`, Origin: 'http://evil.example' };
    expect(await refusalOf(openPage('/v1/vms/vm-a/terminal', crossSite))).toMatchObject({
      status: 403,
    });
    const ws = await openPage('/v1/vms/vm-a/terminal', { Authorization: `Bearer ${API_TOKEN}` });
    ws.close();
  });

  it("words the agent's refusals itself and passes nothing else an agent says", async () => {
    expect(await refusalOf(openPage('/console/vms/vm-busy/terminal', browser()))).toMatchObject({
      status: 409,
      refusal:
        'vm vm-busy: its serial console is in use by another session (one at a time); close that one first',
    });
    expect(await refusalOf(openPage('/console/vms/vm-hostile/terminal', browser()))).toMatchObject({
      status: 409,
      refusal: 'node n1 refused the serial console of vm vm-hostile',
    });
    expect(await refusalOf(openPage('/console/vms/vm-none/terminal', browser()))).toMatchObject({
      status: 404,
    });
  });

  it("takes a tenant's token at the CLI's door for its own VMs alone (another's: the same 404 as none)", async () => {
    const ws = await openPage('/v1/vms/vm-a/terminal', { Authorization: `Bearer ${ACME}` });
    ws.close();
    for (const vm of ['vm-busy', 'vm-none']) {
      expect(
        await refusalOf(openPage(`/v1/vms/${vm}/terminal`, { Authorization: `Bearer ${ACME}` })),
      ).toMatchObject({ status: 404, refusal: `vm ${vm} is not listed on any live node` });
    }
    expect(
      await refusalOf(openPage('/v1/vms/vm-a/terminal', { Authorization: `Bearer ${GLOBEX}` })),
    ).toMatchObject({ status: 404 });
    expect(agent.upgrades.map(({ url }) => url)).toEqual(['/v1/vms/vm-a/terminal']);
  });

  it('writes an audit line for each console opened or refused: who, door, VM, status', async () => {
    (await openPage('/v1/vms/vm-a/terminal', { Authorization: `Bearer ${ACME}` })).close();
    await refusalOf(openPage('/v1/vms/vm-busy/terminal', { Authorization: `Bearer ${GLOBEX}` }));
    await refusalOf(openPage('/console/vms/vm-a/terminal', {}));
    (await openPage('/console/vms/vm-a/terminal', browser())).close();
    const lines = readFileSync(auditLog, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter(({ path }) => String(path).endsWith('/terminal'));
    expect(
      lines.map(({ who, tenant_id, path, vm_id, status }) => ({
        who,
        tenant_id,
        path,
        vm_id,
        status,
      })),
    ).toEqual([
      {
        who: 'tenant',
        tenant_id: 'acme',
        path: '/v1/vms/vm-a/terminal',
        vm_id: 'vm-a',
        status: 101,
      },
      {
        who: 'tenant',
        tenant_id: 'globex',
        path: '/v1/vms/vm-busy/terminal',
        vm_id: 'vm-busy',
        status: 404,
      },
      {
        who: 'none',
        tenant_id: undefined,
        path: '/console/vms/vm-a/terminal',
        vm_id: 'vm-a',
        status: 403,
      },
      {
        who: 'operator',
        tenant_id: undefined,
        path: '/console/vms/vm-a/terminal',
        vm_id: 'vm-a',
        status: 101,
      },
    ]);
  });

  it("closes a session's open consoles when it logs out", async () => {
    const ws = await openPage('/console/vms/vm-a/terminal', browser());
    const closed = new Promise<number>((resolve) => ws.onClose((code) => resolve(code)));
    await request(fleet.opsUrl)
      .post('/logout')
      .set({ Cookie: cookie, 'X-CSRF-Token': csrf, Origin: `http://${host}` })
      .send({})
      .expect(200);
    expect(await closed).toBe(CLOSE_POLICY);
  });
});
