import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { Daemon, FLEET_URL, startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { heartbeat, vmRecord } from '../support/heartbeats';

jest.setTimeout(120_000);

/**
 * Drain, Undrain and Move in the web console, in Debian's chromium against the real controller:
 * a node's Drain button marks it draining (placement's reason shown, Undrain offered), Undrain
 * ends it; a VM's Move button posts its target and shows the controller's answer. The nodes
 * are heartbeats sent from here: the drained one lists no VM, and the moved VM's node has no
 * agent, so the move's refusal is what the page shows.
 */
const OPS_URL = 'http://127.0.0.1:9206';
const VM = 'vm-00000000000000f1';

async function beat(nodeId: string, wgIp: string, vms: ReturnType<typeof vmRecord>[] = []) {
  const response = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      heartbeat({
        node_id: nodeId,
        wg_ip: wgIp,
        // Nothing listens there: an agent asked is refused at once.
        spawn_port: 9299,
        timestamp_utc: new Date().toISOString(),
        vms,
      }),
    ),
  });
  expect(response.status).toBe(200);
}

async function outcomeOf(page: Page, pattern: RegExp): Promise<string> {
  const outcome = page.locator('#outcome', { hasText: pattern });
  await outcome.waitFor({ timeout: 30_000 });
  return (await outcome.textContent()) ?? '';
}

describe('Drain, Undrain and Move in the web console, in chromium', () => {
  let fleet: Daemon;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    fleet = startFleetDaemon();
    await fleet.waitForOutput(/operations listener on 127\.0\.0\.1:9206/);
    await beat('node-d', '127.0.0.7');
    await beat('node-v', '127.0.0.8', [vmRecord(VM)]);
    browser = await launchChromium();
    page = await browser.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await stopAllDaemons();
  });

  it("drains a node from its page, marks it draining with placement's reason, and undrains it", async () => {
    await page.goto(`${OPS_URL}/nodes/node-d`);
    await page.getByRole('button', { name: 'Drain node node-d', exact: true }).click();
    expect(await outcomeOf(page, /drained/)).toBe('node node-d drained: 0 VM(s) moved');
    // The node's part refreshes itself (every 2 s): the mark, placement's reason, Undrain.
    await page
      .getByRole('button', { name: 'Undrain node node-d', exact: true })
      .waitFor({ timeout: 30_000 });
    expect(await page.locator('dd.drain').textContent()).toMatch(/draining since \S+/);
    expect(await page.locator('dd.passed-over').textContent()).toMatch(
      /passes it over: drained since \S+ \(ppn-fleet node undrain ends it\)/,
    );
    await page.goto(`${OPS_URL}/`);
    expect(await page.locator('li.node[data-node="node-d"] .badge.draining').textContent()).toBe(
      'draining',
    );

    await page.goto(`${OPS_URL}/nodes/node-d`);
    await page.getByRole('button', { name: 'Undrain node node-d', exact: true }).click();
    expect(await outcomeOf(page, /undrained/)).toBe(
      'node node-d undrained: placement may choose it again',
    );
    await page
      .getByRole('button', { name: 'Drain node node-d', exact: true })
      .waitFor({ timeout: 30_000 });
  });

  it("moves a VM from its page to the node chosen, showing the controller's answer", async () => {
    await beat('node-d', '127.0.0.7');
    await beat('node-v', '127.0.0.8', [vmRecord(VM)]);
    await page.goto(`${OPS_URL}/vms/${VM}`);
    await page.getByLabel('Move live to').selectOption('node-d');
    await page.getByRole('button', { name: `Move ${VM}` }).click();
    // No agent answers for node-v here: the move is refused in the controller's words.
    expect(await outcomeOf(page, /node-v/)).toMatch(
      new RegExp(`^vm ${VM}: the agent of node node-v could not be reached for the move`),
    );
    expect(fleet.output).toContain(`vm ${VM}: moving from node node-v to node node-d`);
  });
});
