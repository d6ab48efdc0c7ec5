import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, terminalRows } from '../support/browser';
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
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(120_000);

/**
 * The web console in a real browser (Debian's chromium, driven by playwright-core) against a
 * real controller and a real agent with QEMU (TCG, a blank qcow2 base): log in, see the node,
 * create a VM from the form, see it Running, stop it, read its console, delete it; a hostile
 * hostname is shown as text and runs nothing; a cross-site POST changes nothing. Screenshots of
 * the overview at 1280 and 390 px go to test/system/.artifacts/ (gitignored).
 *
 * The console panel is checked against the log as the agent has it (the operations listener's
 * GET /v1/vms/{id}/console): a blank base image boots nothing, so its serial log may be empty;
 * lines then written to the VM's serial log file (as QEMU writes what the guest prints) must
 * follow in the panel.
 */
const OPS_URL = 'http://127.0.0.1:9206';
const API_TOKEN = 'web-console-system-spec-api-token-0123';
const NODE = 'console-node';
const HOSTILE_NODE = 'hostile-node';
const HOSTILE = '<img src=x onerror=alert(1)>';
const ARTIFACTS = join(__dirname, '.artifacts');
const workDir = scratchFolder('web-console-');
const baseImage = join(workDir, 'base.qcow2');

async function opsJson<T>(path: string): Promise<{ status: number; body: T }> {
  const response = await fetch(`${OPS_URL}${path}`, {
    headers: { authorization: `Bearer ${API_TOKEN}` },
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** The console's own words of the last action, once they match `pattern`. */
async function outcomeOf(page: Page, pattern: RegExp): Promise<string> {
  const outcome = page.locator('#outcome', { hasText: pattern });
  await outcome.waitFor({ timeout: 30_000 });
  return (await outcome.textContent()) ?? '';
}

/** The VM's row in the live table shows `state` (the page refreshes itself every 2 s). */
async function rowState(page: Page, vmId: string, state: string): Promise<void> {
  await page
    .locator(`tr[data-vm="${vmId}"] .state-${state.toLowerCase()}`)
    .waitFor({ timeout: 30_000 });
}

describe('the web console in chromium, with real daemons and QEMU', () => {
  let fleet: Daemon;
  let browser: BrowserContext;
  let page: Page;
  const dialogs: string[] = [];
  let vmId = '';

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    fleet = startFleetDaemon({ VM_FLEET_API_TOKEN: API_TOKEN });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    await fleet.waitForOutput(/operations listener on 127\.0\.0\.1:9206/);
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE,
        VM_WG_IP: '127.0.0.7',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, NODE),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: baseImage,
      }),
    );
    browser = await launchChromium();
    page = await browser.newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  });

  afterAll(async () => {
    await browser.close();
    await stopAllDaemons();
  });

  it('asks for the API token, then keeps the session in an HttpOnly, SameSite=Strict cookie', async () => {
    await page.goto(`${OPS_URL}/`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.getByLabel('API token (VM_FLEET_API_TOKEN)').fill('not-the-token-0123456789');
    await page.getByRole('button', { name: 'Log in' }).click();
    expect(await outcomeOf(page, /not the API token/)).toBe(
      'that is not the API token (VM_FLEET_API_TOKEN)',
    );
    await page.getByLabel('API token (VM_FLEET_API_TOKEN)').fill(API_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
    const [cookie] = await browser.cookies(OPS_URL);
    expect(cookie).toMatchObject({
      name: 'ppn_console_session',
      httpOnly: true,
      sameSite: 'Strict',
    });
    expect(cookie.expires).toBeGreaterThan(Date.now() / 1000 + 60);
    expect(cookie.value).not.toContain(API_TOKEN);
    expect(fleet.output).not.toContain(API_TOKEN);
  });

  it('shows the node with its RAM, KVM, VM count and heartbeat age, and no open-API banner', async () => {
    const card = page.locator(`li.node[data-node="${NODE}"]`);
    await card.waitFor();
    expect(await card.locator('meter.ram').getAttribute('aria-label')).toMatch(
      /^RAM \d+ MB used, \d+ MB free of \d+ MB$/,
    );
    expect(await card.textContent()).toMatch(/KVM (yes|no).* 0 VM\(s\) · heartbeat \d+ s ago/s);
    expect(await page.locator('.banner').count()).toBe(0);
    expect(await page.locator('.bar .version').textContent()).toMatch(/^controller \d+\.\d+\.\d+/);
  });

  it('creates a VM from the form and shows it Running', async () => {
    await page.getByLabel('Type').fill('web');
    await page.getByLabel('RAM (MB)').fill('64');
    await page.getByLabel('vCPUs').fill('1');
    await page.getByLabel('Tenant (optional)').fill('acme');
    await page.getByLabel('Place on node').selectOption(NODE);
    await page.getByRole('button', { name: 'Create' }).click();
    const outcome = await outcomeOf(page, /created on node/);
    vmId = /^vm (\S+) created on node console-node/.exec(outcome)?.[1] ?? '';
    expect(vmId).toMatch(/^vm-/);
    await rowState(page, vmId, 'Running');
    const row = page.locator(`tr[data-vm="${vmId}"]`);
    expect(await row.locator('td[data-label="Tenant"]').textContent()).toBe('acme');
    expect(await row.locator('td[data-label="Desired"]').textContent()).toBe('running');
    expect(await row.locator('td[data-label="Node"]').textContent()).toBe(NODE);
    // The test's agent runs VMs under TCG (VM_ACCEL=tcg, see startAgent).
    expect(await row.locator('td[data-label="Accel."]').textContent()).toBe('tcg');
  });

  it('writes screenshots of the overview at 1280 and 390 px wide, nothing wider than the phone', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'console-overview-1280.png'), fullPage: true });
    const phone = await browser.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${OPS_URL}/`);
    await phone.locator(`tr[data-vm="${vmId}"]`).waitFor();
    expect(
      await phone.evaluate<number>('document.documentElement.scrollWidth'),
    ).toBeLessThanOrEqual(390);
    await phone.screenshot({ path: join(ARTIFACTS, 'console-overview-390.png'), fullPage: true });
    await phone.close();
  });

  it('changes nothing on a cross-site POST without the CSRF token', async () => {
    const attacker: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<form method="post" action="${OPS_URL}/console/vms/${vmId}/delete"></form><script>document.forms[0].submit()</script>`,
      );
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.2', resolve));
    try {
      const { port } = attacker.address() as AddressInfo;
      const evil = await browser.newPage();
      const [answer] = await Promise.all([
        evil.waitForResponse(`${OPS_URL}/console/vms/${vmId}/delete`),
        evil.goto(`http://127.0.0.2:${port}/`, { waitUntil: 'commit' }),
      ]);
      expect(answer.status()).toBe(403);
      await evil.close();
    } finally {
      attacker.closeAllConnections();
      await new Promise((resolve) => attacker.close(resolve));
    }
    expect((await opsJson<{ state: string }>(`/v1/vms/${vmId}`)).body.state).toBe('Running');
  });

  it('stops the VM and shows it Stopped', async () => {
    await page.getByRole('button', { name: `Force stop ${vmId}` }).click();
    expect(await outcomeOf(page, /stop taken/)).toBe(
      `vm ${vmId}: stop taken by its node (stopping)`,
    );
    await rowState(page, vmId, 'Stopped');
    expect(await page.locator(`tr[data-vm="${vmId}"] td[data-label="Desired"]`).textContent()).toBe(
      'stopped',
    );
  });

  it("opens the VM's console: the serial log as the agent has it", async () => {
    await page.getByRole('link', { name: vmId }).click();
    await page.getByRole('heading', { name: `VM ${vmId}` }).waitFor();
    await page.locator('#serial[data-next]').waitFor({ state: 'attached' });
    const agentLog = await opsJson<{ text: string }>(`/v1/vms/${vmId}/console`);
    expect(agentLog.status).toBe(200);
    // The terminal (xterm.js) shows the log's last plain line as a row of its own.
    const plainLines = agentLog.body.text
      .split('\n')
      .map((line) => line.replace(/\s+$/, ''))
      .filter((line) => line !== '' && ![...line].some((ch) => ch.charCodeAt(0) < 0x20));
    expect(await terminalRows(page)).toEqual(expect.arrayContaining(plainLines.slice(-1)));
    // Lines the guest prints from now on (QEMU appends to this file) follow in the panel.
    appendFileSync(
      join(workDir, NODE, 'run', vmId, 'serial.log'),
      'Booting from Hard Disk...\nDebian GNU/Linux 12 web ttyS0\n',
    );
    await eventually(
      'the appended lines in the terminal',
      async () =>
        (await terminalRows(page))
          .join('\n')
          .includes('Booting from Hard Disk...\nDebian GNU/Linux 12 web ttyS0')
          ? true
          : undefined,
      10_000,
    );
    // What protects it, as GET /v1/vms/{vm_id}/copies has it: a fleet of one node holds no copy.
    const copies = page.locator('#copies');
    await copies.getByRole('heading', { name: 'Backups' }).waitFor();
    expect(await copies.textContent()).toContain('No copy on another node.');
    const protection = await opsJson<{ copies: unknown[] }>(`/v1/vms/${vmId}/copies`);
    expect([protection.status, protection.body.copies]).toEqual([200, []]);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
  });

  it('deletes the VM after a confirmation that names it, and it is gone', async () => {
    await page.getByRole('button', { name: `Delete ${vmId}` }).click();
    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor();
    expect(await dialog.locator('h2').textContent()).toBe(`Delete VM ${vmId}?`);
    const confirm = dialog.getByRole('button', { name: `Delete ${vmId}` });
    expect(await confirm.isDisabled()).toBe(true);
    await dialog.getByRole('textbox').fill(vmId);
    await confirm.click();
    expect(await outcomeOf(page, /deleted/)).toBe(`vm ${vmId} deleted`);
    await page.locator(`tr[data-vm="${vmId}"]`).waitFor({ state: 'detached' });
    expect((await opsJson(`/v1/vms/${vmId}`)).status).toBe(404);
  });

  it("shows a node's hostile hostname as text, and runs nothing", async () => {
    const sent = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        heartbeat({ node_id: HOSTILE_NODE, hostname: HOSTILE, wg_ip: '127.0.0.9', reserved: true }),
      ),
    });
    expect(sent.status).toBe(200);
    const card = page.locator(`li.node[data-node="${HOSTILE_NODE}"]`);
    // Arrives by the live refresh (innerHTML of the server's rendering).
    await card.waitFor({ timeout: 10_000 });
    expect(await card.locator('.hostname').textContent()).toBe(HOSTILE);
    await page.goto(`${OPS_URL}/nodes/${HOSTILE_NODE}`);
    expect(await page.locator('dd.hostname').textContent()).toBe(HOSTILE);
    const refreshed = await page.locator('body').getAttribute('data-refreshed');
    // One more live refresh of the page (the script stamps the body after each).
    await page
      .locator(`body[data-refreshed]:not([data-refreshed="${refreshed ?? ''}"])`)
      .waitFor({ timeout: 10_000 });
    expect(await page.locator('img').count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it('answers no page without a session: the cookie is what lets the browser in', async () => {
    const fresh = await launchChromium();
    const other = await fresh.newPage();
    await other.goto(`${OPS_URL}/nodes/${NODE}`);
    expect(new URL(other.url()).pathname).toBe('/login');
    await fresh.close();
  });
});
