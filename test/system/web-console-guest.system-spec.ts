import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { FLEET_URL, enrolled, listeningFleetDaemon, startAgent } from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { scratchFolder } from '../support/scratch-folders';

/** A Debian guest boots in about 60 s under TCG; its console shows it long before SSH is up. */
const BOOT_LINES_MS = 150_000;
jest.setTimeout(BOOT_LINES_MS + 60_000);

/**
 * The web console's serial console with a real guest (the Debian image of
 * deploy/images/build-debian-image.sh, built before the system tier runs): a VM created from the
 * form shows its boot lines in the console panel, followed as the guest prints them.
 */
const OPS_URL = 'http://127.0.0.1:9206';
const NODE = 'console-guest-node';
const workDir = scratchFolder('web-console-guest-');

describe("the web console's serial console, with a real guest", () => {
  const image = guestImagePath();
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    if (!existsSync(image)) {
      throw new Error(
        `no guest image ${image}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    await listeningFleetDaemon();
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE,
        VM_WG_IP: '127.0.0.8',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, 'disks'),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: image,
      }),
    );
    browser = await launchChromium();
    page = await browser.newPage();
  });

  afterAll(async () => {
    await browser.close();
  });

  it('shows the boot lines of a VM created from the form', async () => {
    await page.goto(`${OPS_URL}/`);
    await page.getByLabel('Type').fill('guest');
    await page.getByLabel('RAM (MB)').fill('512');
    await page.getByLabel('Place on node').selectOption(NODE);
    await page.getByRole('button', { name: 'Create' }).click();
    const outcome = page.locator('#outcome', { hasText: /created on node/ });
    await outcome.waitFor({ timeout: 30_000 });
    const vmId = /^vm (\S+) created/.exec((await outcome.textContent()) ?? '')?.[1] ?? '';
    expect(vmId).toMatch(/^vm-/);
    await page.goto(`${OPS_URL}/vms/${vmId}`);
    await page
      .locator('#serial', { hasText: /Linux version|login:|vm-fleet-seed|cloud-init/ })
      .waitFor({ timeout: BOOT_LINES_MS });
    expect(await page.locator('#serial').textContent()).not.toContain(String.fromCharCode(0x1b));
  });
});
