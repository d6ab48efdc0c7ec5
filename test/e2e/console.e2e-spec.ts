import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, json } from '../support/stub-agent';

/**
 * The web console on the operations listener, in-process: its headers (CSP), the login and
 * session cookie, the CSRF refusals, escaping of what a node sends, and the open-API banner.
 */

const API_TOKEN = 'api-token-1a7f3c9e5b0d2864';
const HOSTILE = '<img src=x onerror=alert(1)>';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** The session cookie a Set-Cookie header sets (name=value). */
function sessionOf(setCookie: string[] | string | undefined): string {
  const header = ([] as string[]).concat(setCookie ?? []).find((line) => line.startsWith('ppn_'));
  if (header === undefined) throw new Error('no session cookie was set');
  return header.split(';')[0];
}

function csrfOf(page: string): string {
  const token = /<meta name="csrf-token" content="([^"]+)" \/>/.exec(page)?.[1];
  if (token === undefined) throw new Error('the page carries no CSRF token');
  return token;
}

/** A loopback port nothing listens on: a node's agent there refuses at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('web console', () => {
  let fleet: RunningFleet;

  afterEach(async () => {
    await fleet.close();
  });

  describe('with VM_FLEET_API_TOKEN', () => {
    beforeEach(async () => {
      fleet = await startFleet({ ops: true, env: { VM_FLEET_API_TOKEN: API_TOKEN } });
    });

    async function logIn(): Promise<{ cookie: string; csrf: string }> {
      const login = await request(fleet.opsUrl)
        .post('/login')
        .send({ token: API_TOKEN })
        .expect(200);
      const cookie = sessionOf(login.headers['set-cookie']);
      const page = await request(fleet.opsUrl).get('/').set('Cookie', cookie).expect(200);
      return { cookie, csrf: csrfOf(page.text) };
    }

    it('sends a page without a session to the login form, with the strict headers', async () => {
      const page = await request(fleet.opsUrl).get('/').expect(303);
      expect(page.headers.location).toBe('/login');
      const login = await request(fleet.opsUrl).get('/login').expect(200);
      for (const answer of [page, login]) {
        expect(answer.headers['content-security-policy']).toBe(CSP);
        expect(answer.headers['x-frame-options']).toBe('DENY');
        expect(answer.headers['x-content-type-options']).toBe('nosniff');
        expect(answer.headers['cache-control']).toBe('no-store');
      }
      expect(login.text).toContain('<form id="login"');
      expect(login.text).not.toMatch(/<script>|<script [^>]*>[^<]|\son[a-z]+=/);
      expect(login.text).not.toContain('The API is open');
    });

    it('refuses a wrong token and sets an HttpOnly, SameSite=Strict cookie that expires for the right one', async () => {
      const wrong = await request(fleet.opsUrl)
        .post('/login')
        .send({ token: 'not-the-token-0123456789' })
        .expect(401);
      expect(wrong.body.message).toBe('that is not the API token (VM_FLEET_API_TOKEN)');
      expect(wrong.headers['set-cookie']).toBeUndefined();
      const login = await request(fleet.opsUrl)
        .post('/login')
        .send({ token: API_TOKEN })
        .expect(200);
      const setCookie = ([] as string[]).concat(login.headers['set-cookie'] ?? [])[0];
      expect(setCookie).toMatch(
        /^ppn_console_session=v1\.[^;]+; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict$/,
      );
      expect(setCookie).not.toContain(API_TOKEN);
      const behindTls = await request(fleet.opsUrl)
        .post('/login')
        .set('X-Forwarded-Proto', 'https')
        .send({ token: API_TOKEN })
        .expect(200);
      expect(([] as string[]).concat(behindTls.headers['set-cookie'] ?? [])[0]).toMatch(
        /; HttpOnly; SameSite=Strict; Secure$/,
      );
    });

    it('shows the overview to a session, and refuses data without one', async () => {
      const { cookie } = await logIn();
      const page = await request(fleet.opsUrl).get('/').set('Cookie', cookie).expect(200);
      expect(page.text).toContain('Fleet overview');
      expect(page.text).toContain('<script src="/console/assets/console.js" defer></script>');
      await request(fleet.opsUrl).get('/console/fragments/overview').expect(401);
      await request(fleet.opsUrl)
        .get('/console/fragments/overview')
        .set('Cookie', 'ppn_console_session=v1.9999999999.forged.forged')
        .expect(401);
    });

    it("refuses a POST without the CSRF token, with another session's, and from another site", async () => {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('Authorization', `Bearer ${API_TOKEN}`)
        .send(
          heartbeat({ node_id: 'n1', vms: [vmRecord('vm-1')], spawn_port: await closedPort() }),
        );
      const { cookie, csrf } = await logIn();
      const other = await logIn();
      const refusals = [
        request(fleet.opsUrl).post('/console/vms/vm-1/delete').set('Cookie', cookie).send({}),
        request(fleet.opsUrl)
          .post('/console/vms/vm-1/delete')
          .set('Cookie', cookie)
          .set('X-CSRF-Token', other.csrf)
          .send({}),
        request(fleet.opsUrl)
          .post('/console/vms/vm-1/delete')
          .set('Cookie', cookie)
          .set('X-CSRF-Token', csrf)
          .set('Origin', 'http://evil.example')
          .send({}),
        request(fleet.opsUrl)
          .post('/console/vms/vm-1/delete')
          .set('Cookie', cookie)
          .set('X-CSRF-Token', csrf)
          .set('Sec-Fetch-Site', 'cross-site')
          .send({}),
      ];
      for (const refusal of refusals) {
        const answer = await refusal.expect(403);
        expect(answer.body.message).toMatch(/^refused: /);
      }
    });

    it('ends a session on the controller at logout: a copied cookie is refused after', async () => {
      const { cookie, csrf } = await logIn();
      const copied = cookie;
      const other = await logIn();
      await request(fleet.opsUrl)
        .get('/console/fragments/overview')
        .set('Cookie', copied)
        .expect(200);
      const out = await request(fleet.opsUrl)
        .post('/logout')
        .set('Cookie', cookie)
        .set('X-CSRF-Token', csrf)
        .send({})
        .expect(200);
      expect(([] as string[]).concat(out.headers['set-cookie'] ?? [])[0]).toContain('Max-Age=0');
      await request(fleet.opsUrl)
        .get('/console/fragments/overview')
        .set('Cookie', copied)
        .expect(401);
      await request(fleet.opsUrl).get('/').set('Cookie', copied).expect(303);
      // Another session is not ended by this one's logout.
      await request(fleet.opsUrl)
        .get('/console/fragments/overview')
        .set('Cookie', other.cookie)
        .expect(200);
    });

    it('ends every session when the token changes', async () => {
      const { cookie } = await logIn();
      const renewed = await startFleet({
        ops: true,
        env: { VM_FLEET_API_TOKEN: 'api-token-changed-0123456789' },
      });
      try {
        await request(renewed.opsUrl)
          .get('/console/fragments/overview')
          .set('Cookie', cookie)
          .expect(401);
      } finally {
        await renewed.close();
      }
    });

    it('makes a client address wait after 5 wrong tokens in a row, the wait doubling, on the clock', async () => {
      const attempt = (token: string) => request(fleet.opsUrl).post('/login').send({ token });
      for (let i = 0; i < 5; i++) await attempt('not-the-token-0123456789').expect(401);
      const held = await attempt(API_TOKEN).expect(429);
      expect(held.headers['retry-after']).toBe('1');
      expect(held.headers['set-cookie']).toBeUndefined();
      expect(held.body.message).toBe('too many wrong tokens from this address: try again in 1 s');
      fleet.clock.advance(1_000);
      await attempt('not-the-token-0123456789').expect(401);
      const longer = await attempt('not-the-token-0123456789').expect(429);
      expect(longer.headers['retry-after']).toBe('2');
      fleet.clock.advance(1_999);
      await attempt(API_TOKEN).expect(429);
      fleet.clock.advance(1);
      await attempt(API_TOKEN).expect(200);
      // The right token cleared the address: five wrong ones are answered again.
      for (let i = 0; i < 5; i++) await attempt('not-the-token-0123456789').expect(401);
    });

    it('takes the API token as a bearer token on the operations routes still', async () => {
      await request(fleet.opsUrl)
        .get('/v1/vms')
        .set('Authorization', `Bearer ${API_TOKEN}`)
        .expect(200);
      await request(fleet.opsUrl).get('/v1/vms').expect(401);
    });

    it('serves its stylesheet and script, and nothing else, to anyone', async () => {
      const css = await request(fleet.opsUrl).get('/console/assets/console.css').expect(200);
      expect(css.headers['content-type']).toMatch(/^text\/css/);
      const js = await request(fleet.opsUrl).get('/console/assets/console.js').expect(200);
      expect(js.headers['content-type']).toMatch(/^text\/javascript/);
      // The VM page's terminal, xterm.js, from the controller's own @xterm/xterm package, with
      // the console's headers (no CDN, no source map asked for).
      const xterm = await request(fleet.opsUrl).get('/console/assets/xterm.js').expect(200);
      expect(xterm.headers['content-type']).toMatch(/^text\/javascript/);
      expect(xterm.text).toContain('Terminal');
      expect(xterm.text).not.toContain('sourceMappingURL');
      const xtermCss = await request(fleet.opsUrl).get('/console/assets/xterm.css').expect(200);
      expect(xtermCss.headers['content-type']).toMatch(/^text\/css/);
      expect(xtermCss.text).toContain('.xterm');
      for (const answer of [xterm, xtermCss]) {
        expect(answer.headers['content-security-policy']).toBe(CSP);
        expect(answer.headers['x-content-type-options']).toBe('nosniff');
        expect(answer.headers['cache-control']).toBe('no-store');
      }
      await request(fleet.opsUrl).get('/console/assets/..%2Fconsole.controller.ts').expect(404);
      await request(fleet.opsUrl).get('/console/assets/constructor').expect(404);
    });
  });

  describe('on the VMs of the store', () => {
    beforeEach(async () => {
      fleet = await startFleet({ ops: true });
    });

    async function session(): Promise<{ cookie: string; csrf: string }> {
      const page = await request(fleet.opsUrl).get('/').expect(200);
      return { cookie: sessionOf(page.headers['set-cookie']), csrf: csrfOf(page.text) };
    }

    async function enroll(nodeId: string, vms: ReturnType<typeof vmRecord>[]): Promise<void> {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: nodeId, vms, spawn_port: await closedPort() }))
        .expect(200);
    }

    it('filters the VMs by tenant and by node', async () => {
      await enroll('n1', [vmRecord('vm-a', { tenant_id: 'acme' }), vmRecord('vm-b')]);
      await enroll('n2', [vmRecord('vm-c', { tenant_id: 'acme' })]);
      const { cookie } = await session();
      const shown = async (query: string): Promise<string[]> => {
        const fragment = await request(fleet.opsUrl)
          .get(`/console/fragments/overview${query}`)
          .set('Cookie', cookie)
          .expect(200);
        return [...fragment.text.matchAll(/<tr\s+data-vm="([^"]+)"/g)].map(([, id]) => id);
      };
      expect(await shown('')).toEqual(['vm-a', 'vm-b', 'vm-c']);
      expect(await shown('?tenant=acme')).toEqual(['vm-a', 'vm-c']);
      expect(await shown('?node=n1')).toEqual(['vm-a', 'vm-b']);
      expect(await shown('?tenant=acme&node=n2')).toEqual(['vm-c']);
      expect(await shown('?tenant=&node=')).toEqual(['vm-a', 'vm-b', 'vm-c']);
      await request(fleet.opsUrl)
        .get('/console/fragments/overview?tenant=<b>')
        .set('Cookie', cookie)
        .expect(400);
    });

    it("answers a silent node's VM's delete in the API's words, and forgets it when asked", async () => {
      await enroll('n1', [vmRecord('vm-a')]);
      fleet.clock.advance(NODE_STALE_AFTER_MS + 1);
      const { cookie, csrf } = await session();
      const page = await request(fleet.opsUrl).get('/').set('Cookie', cookie).expect(200);
      expect(page.text).toContain('data-action="/console/vms/vm-a/forget"');
      expect(page.text).not.toContain('data-action="/console/vms/vm-a/delete"');
      const post = (path: string) =>
        request(fleet.opsUrl).post(path).set('Cookie', cookie).set('X-CSRF-Token', csrf).send({});
      const refused = await post('/console/vms/vm-a/delete').expect(409);
      expect(refused.body.message).toMatch(
        /^vm vm-a is on node n1, silent since .*: no agent can destroy it/,
      );
      const stop = await post('/console/vms/vm-a/stop').expect(409);
      expect(stop.body.message).toMatch(/^vm vm-a is on node n1, whose agent has not listed it/);
      const forgotten = await post('/console/vms/vm-a/forget').expect(200);
      expect(forgotten.body.message).toBe('vm vm-a forgotten: nothing was stopped on its node');
      await post('/console/vms/vm-a/forget').expect(404);
      const vms = await request(fleet.url).get('/v1/vms').expect(200);
      expect(vms.body).toEqual([]);
    });

    it("restores a VM from its VM page's form: CSRF required, the operations listener's rules and words", async () => {
      await enroll('n1', [vmRecord('vm-a')]);
      const { cookie, csrf } = await session();
      const page = await request(fleet.opsUrl).get('/vms/vm-a').set('Cookie', cookie).expect(200);
      expect(page.text).toContain('data-action="/console/vms/vm-a/restore"');
      // Its terminal is xterm.js, which injects styles: inline styles allowed on this page alone,
      // its scripts still its own files only.
      expect(page.text).toContain('<script src="/console/assets/xterm.js" defer></script>');
      expect(page.headers['content-security-policy']).toBe(
        CSP.replace("style-src 'self';", "style-src 'self' 'unsafe-inline';"),
      );
      expect(page.headers['content-security-policy']).toContain("script-src 'self';");
      const overview = await request(fleet.opsUrl).get('/').set('Cookie', cookie).expect(200);
      expect(overview.headers['content-security-policy']).toBe(CSP);
      await request(fleet.opsUrl)
        .post('/console/vms/vm-a/restore')
        .set('Cookie', cookie)
        .send({})
        .expect(403);
      const post = (body: object) =>
        request(fleet.opsUrl)
          .post('/console/vms/vm-a/restore')
          .set('Cookie', cookie)
          .set('X-CSRF-Token', csrf)
          .send(body);
      const running = await post({}).expect(409);
      expect(running.body.message).toMatch(/^vm vm-a still runs on node n1/);
      const bad = await post({ to: '<b>' }).expect(400);
      expect(JSON.stringify(bad.body.message)).toContain('to');
      const noCopy = await post({ as_new: true }).expect(422);
      expect(noCopy.body.message).toBe(
        'vm vm-a: no live node holds a copy of it; restore it from a backup: from <backup_id> with to <node> (the node whose VM_BACKUP_DIR holds it)',
      );
    });

    it("sends the actions to the VM's agent and answers in the controller's words", async () => {
      const agent = await new StubAgent((call, res) => {
        const action = /\/v1\/vms\/vm-a\/(stop|start|restart)$/.exec(call.url)?.[1];
        if (action === 'start') {
          return json(res, 409, { statusCode: 409, message: 'vm vm-a is already running' });
        }
        json(res, 202, {
          vm_id: 'vm-a',
          state: 'Running',
          desired_state: action === 'stop' ? 'stopped' : 'running',
          operation: action === 'stop' ? 'stopping' : 'restarting',
          restart_count: 0,
          last_exit: null,
          reason: null,
          next_start_at: null,
        });
      }).start();
      try {
        await request(fleet.url)
          .post('/v1/nodes/heartbeat')
          .send(heartbeat({ node_id: 'n1', vms: [vmRecord('vm-a')], spawn_port: agent.port }))
          .expect(200);
        const { cookie, csrf } = await session();
        const post = (path: string, body: object = {}) =>
          request(fleet.opsUrl)
            .post(path)
            .set('Cookie', cookie)
            .set('X-CSRF-Token', csrf)
            .send(body);
        const stopped = await post('/console/vms/vm-a/stop', { force: true }).expect(202);
        expect(stopped.body.message).toBe('vm vm-a: stop taken by its node (stopping)');
        expect(agent.calls.at(-1)).toMatchObject({
          method: 'POST',
          url: '/v1/vms/vm-a/stop',
          body: { force: true, timeout_s: 60 },
        });
        const restarted = await post('/console/vms/vm-a/restart').expect(202);
        expect(restarted.body.message).toBe('vm vm-a: restart taken by its node (restarting)');
        const started = await post('/console/vms/vm-a/start').expect(409);
        expect(started.body.message).toBe('vm vm-a on node n1 is already running');
        const bad = await post('/console/vms', { vm_type: 'web', ram_mb: 0, vcpu_count: 1 }).expect(
          400,
        );
        expect(bad.body.message).toContain('ram_mb must not be less than 1');
      } finally {
        await agent.stop();
      }
    });

    it('answers an unknown VM or node with a page that says so', async () => {
      const { cookie } = await session();
      const vm = await request(fleet.opsUrl).get('/vms/vm-nope').set('Cookie', cookie).expect(404);
      expect(vm.text).toContain('No node lists a VM vm-nope.');
      const node = await request(fleet.opsUrl)
        .get('/nodes/n-nope')
        .set('Cookie', cookie)
        .expect(404);
      expect(node.text).toContain('No node n-nope is stored.');
    });
  });

  describe('with an open API', () => {
    beforeEach(async () => {
      fleet = await startFleet({ ops: true });
    });

    it('says the API is open, escapes what a node sends and needs no login', async () => {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .send(
          heartbeat({
            node_id: 'n1',
            hostname: HOSTILE,
            spawn_port: await closedPort(),
            vms: [vmRecord('vm-1', { vm_type: 'web', tenant_id: 'acme' })],
          }),
        )
        .expect(200);
      const page = await request(fleet.opsUrl).get('/').expect(200);
      expect(page.text).toContain('The API is open');
      expect(page.text).not.toContain(HOSTILE);
      expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
      const cookie = sessionOf(page.headers['set-cookie']);
      const fragment = await request(fleet.opsUrl)
        .get('/console/fragments/overview')
        .set('Cookie', cookie)
        .expect(200);
      expect(fragment.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(fragment.text).toContain('vm-1');
      await request(fleet.opsUrl).get('/login').expect(303);
    });

    it('issues nothing to a DNS-rebound name: no session, no CSRF token, no create', async () => {
      const rebound = 'rebind.attacker.example:9206';
      const page = await request(fleet.opsUrl).get('/').set('Host', rebound).expect(421);
      expect(page.headers['set-cookie']).toBeUndefined();
      expect(page.text).not.toContain('csrf-token');
      const own = await request(fleet.opsUrl).get('/').expect(200);
      const refused = await request(fleet.opsUrl)
        .post('/console/vms')
        .set('Host', rebound)
        .set('Cookie', sessionOf(own.headers['set-cookie']))
        .set('X-CSRF-Token', csrfOf(own.text))
        .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
        .expect(421);
      expect(refused.body.message).toBe(
        `Host ${rebound} is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS`,
      );
    });

    it('still refuses a state-changing request without the CSRF token', async () => {
      const page = await request(fleet.opsUrl).get('/').expect(200);
      const cookie = sessionOf(page.headers['set-cookie']);
      await request(fleet.opsUrl)
        .post('/console/vms')
        .set('Cookie', cookie)
        .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
        .expect(403);
      const refused = await request(fleet.opsUrl)
        .post('/console/vms')
        .set('Cookie', cookie)
        .set('X-CSRF-Token', csrfOf(page.text))
        .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
        .expect(503);
      // Past the CSRF check: placement's own words.
      expect(refused.body.message).toMatch(/no node is live/);
    });
  });
});
