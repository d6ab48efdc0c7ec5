import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page, Request, Response } from 'playwright-core';
import { deriveTenantToken } from '@app/daemon';
import { launchChromium } from '../support/browser';
import { Daemon, FLEET_URL, startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(120_000);

/**
 * A tenant in the web console, in Debian's chromium against the real controller: it logs in
 * with its own token and sees its own VMs only (another tenant's VM page is refused), and the
 * operator sees each tenant's use against its quota. The node is a heartbeat sent from here
 * (no agent: nothing here asks one).
 */
const OPS_URL = 'http://127.0.0.1:9206';
const API_TOKEN = 'web-console-tenants-api-token-0123';
const TENANT_SECRET = 'web-console-tenants-secret-0123456789abcdef';
const ACME = deriveTenantToken(TENANT_SECRET, 'acme');
const ACME_VM = 'vm-acme000000000001';
const GLOBEX_VM = 'vm-globex0000000001';

describe('tenants in the web console, in chromium', () => {
  let fleet: Daemon;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    const folder = scratchFolder('web-console-tenants-');
    const quotas = join(folder, 'quotas.json');
    writeFileSync(quotas, JSON.stringify({ acme: { vms: 3 }, globex: {} }));
    fleet = startFleetDaemon({
      VM_FLEET_API_TOKEN: API_TOKEN,
      VM_FLEET_TENANT_SECRET: TENANT_SECRET,
      VM_FLEET_TENANT_QUOTAS_FILE: quotas,
    });
    await fleet.waitForOutput(/operations listener on 127\.0\.0\.1:9206/);
    const beat = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        heartbeat({
          node_id: 'node-t',
          wg_ip: '127.0.0.9',
          timestamp_utc: new Date().toISOString(),
          vms: [
            vmRecord(ACME_VM, { tenant_id: 'acme' }),
            vmRecord(GLOBEX_VM, { tenant_id: 'globex' }),
          ],
        }),
      ),
    });
    expect(beat.status).toBe(200);
    browser = await launchChromium();
    page = await browser.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await stopAllDaemons();
  });

  it("logs a tenant in with its token: its own VMs only, another tenant's VM refused", async () => {
    await page.goto(`${OPS_URL}/`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.getByLabel('API token (VM_FLEET_API_TOKEN)').fill(ACME);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Fleet overview' }).waitFor();
    expect(await page.locator('.bar .tenant').textContent()).toBe('tenant acme');
    await page.locator(`tr[data-vm="${ACME_VM}"]`).waitFor();
    expect(await page.locator(`tr[data-vm="${GLOBEX_VM}"]`).count()).toBe(0);
    expect(await page.content()).not.toContain(GLOBEX_VM);
    expect(await page.locator('#tenants-title').count()).toBe(0);

    const other = await page.goto(`${OPS_URL}/vms/${GLOBEX_VM}`);
    expect(other?.status()).toBe(404);
    expect(await page.content()).toContain(`vm ${GLOBEX_VM} is not listed on any live node`);
    const own = await page.goto(`${OPS_URL}/vms/${ACME_VM}`);
    expect(own?.status()).toBe(200);
    expect(fleet.output).not.toContain(ACME);
  });

  it("shows the operator every tenant's use against its quota", async () => {
    await page.goto(`${OPS_URL}/`);
    // Once logged out the page only navigates: a part refreshed then (answered 401) would start
    // a second navigation that aborts the first.
    let loggedOut = false;
    const sentAfterLogOut: string[] = [];
    const answered = (response: Response) => {
      if (new URL(response.url()).pathname === '/logout') loggedOut = true;
    };
    const sent = (request: Request) => {
      if (loggedOut) sentAfterLogOut.push(new URL(request.url()).pathname);
    };
    page.on('response', answered).on('request', sent);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login$/);
    page.off('response', answered).off('request', sent);
    expect(sentAfterLogOut.filter((path) => path.startsWith('/console/fragments/'))).toEqual([]);
    await page.getByLabel('API token (VM_FLEET_API_TOKEN)').fill(API_TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Tenants' }).waitFor();
    const acme = page.locator('table.tenants tr', { hasText: 'acme' });
    expect((await acme.locator('td').allTextContents())[0]).toBe('1 / 3');
    await page.locator(`tr[data-vm="${GLOBEX_VM}"]`).waitFor();
  });
});
