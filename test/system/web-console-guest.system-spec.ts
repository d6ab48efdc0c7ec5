import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { WebSocketConnection, WebSocketRefusedError, openWebSocket } from '@app/daemon';
import { launchChromium, terminalRows } from '../support/browser';
import {
  FLEET_URL,
  enrolled,
  eventually,
  listeningFleetDaemon,
  startAgent,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { CLI_MAIN } from '../support/ppn-fleet-cli';
import { scratchFolder } from '../support/scratch-folders';

/** A Debian guest boots in about 60 s under TCG; its console shows it long before SSH is up. */
const BOOT_LINES_MS = 150_000;
jest.setTimeout(BOOT_LINES_MS + 60_000);
/** How long the guest has to answer a key on its serial console. */
const ANSWER_MS = 20_000;

/**
 * The web console's serial console with a real guest (the Debian image of
 * deploy/images/build-debian-image.sh, built before the system tier runs): a VM created from the
 * form shows its boot lines in the console panel, followed as the guest prints them; its
 * console, once clicked, is a terminal on the guest's serial port (Enter shows the login prompt,
 * what is typed is echoed), through the controller and the agent, the serial log still written;
 * one session at a time, freed when the page or the connection closes.
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
    await browser?.close();
  });

  let vmId = '';

  it('shows the boot lines of a VM created from the form', async () => {
    await page.goto(`${OPS_URL}/`);
    await page.getByLabel('Type').fill('guest');
    await page.getByLabel('RAM (MB)').fill('512');
    await page.getByLabel('Place on node').selectOption(NODE);
    await page.getByRole('button', { name: 'Create' }).click();
    const outcome = page.locator('#outcome', { hasText: /created on node/ });
    await outcome.waitFor({ timeout: 30_000 });
    vmId = /^vm (\S+) created/.exec((await outcome.textContent()) ?? '')?.[1] ?? '';
    expect(vmId).toMatch(/^vm-/);
    await page.goto(`${OPS_URL}/vms/${vmId}`);
    // The log followed in the terminal (xterm.js's rows), its escape sequences interpreted.
    await eventually(
      'the boot lines in the terminal',
      async () =>
        /Linux version|login:|vm-fleet-seed|cloud-init/.test((await terminalRows(page)).join('\n'))
          ? true
          : undefined,
      BOOT_LINES_MS,
    );
    expect((await terminalRows(page)).join('\n')).not.toContain(String.fromCharCode(0x1b));
  });

  it("becomes a terminal on the guest's serial port once clicked: Enter shows login:, typing echoes", async () => {
    await page.goto(`${OPS_URL}/vms/${vmId}`);
    const shown = async (): Promise<string> => (await terminalRows(page)).join('\n');
    /** How many rows show a login prompt. */
    const prompts = async (): Promise<number> =>
      (await terminalRows(page)).filter((row) => /login:/.test(row)).length;
    // Booted to its login prompt (the log followed), before any key is sent.
    await eventually(
      'a login prompt in the terminal',
      async () => (/login:/.test(await shown()) ? true : undefined),
      BOOT_LINES_MS,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}; the terminal shows ${JSON.stringify(await shown())}`);
    });
    const before = await prompts();
    // xterm.js draws the terminal: a click focuses it, which opens the port.
    await page.locator('#serial .xterm-screen').click();
    await page.locator('#serial[data-terminal-state="open"]').waitFor({ timeout: ANSWER_MS });
    await page.keyboard.press('Enter');
    // A new prompt drawn: the guest's getty answered the Enter.
    await eventually(
      'a new login prompt',
      async () => ((await prompts()) > before ? true : undefined),
      ANSWER_MS,
    );
    await page.keyboard.type('ppnecho');
    await eventually(
      'the typed name echoed',
      async () => (/login:\s+ppnecho$/.test(await shown()) ? true : undefined),
      ANSWER_MS,
    );
    await page.keyboard.press('Control+U');
    // The console as an operator sees it (gitignored, as the overview's of web-console.system-spec.ts).
    await page.screenshot({ path: join(__dirname, '.artifacts', 'console-vm-terminal-1280.png') });
    // Leaving the page frees the port for the next session (next test).
    await page.goto('about:blank');
  });

  it('answers the CLI door of the operations listener too, one session at a time, the log still written', async () => {
    const url = new URL(`/v1/vms/${vmId}/terminal`, OPS_URL);
    const logNext = async (): Promise<number> => {
      const answer = await fetch(`${OPS_URL}/v1/vms/${vmId}/console?max_bytes=1`);
      return ((await answer.json()) as { next: number }).next;
    };
    /** A session whose `seen` resolves once what the guest sent matches. */
    const open = async (): Promise<{
      ws: WebSocketConnection;
      seen: (re: RegExp) => Promise<void>;
    }> => {
      // The page closed a moment ago: its port is free once its close has reached the agent.
      const ws = await eventually(
        'the serial console to be free',
        () =>
          openWebSocket({ url, timeoutMs: 10_000 }).catch((error: unknown) => {
            if (error instanceof WebSocketRefusedError && error.status === 409) return undefined;
            throw error;
          }),
        ANSWER_MS,
      );
      let received = '';
      const waiting: Array<{ re: RegExp; resolve: () => void }> = [];
      ws.onMessage((data) => {
        received += data.toString('utf8');
        for (const wait of waiting.filter(({ re }) => re.test(received))) {
          waiting.splice(waiting.indexOf(wait), 1);
          wait.resolve();
        }
      });
      const seen = (re: RegExp): Promise<void> =>
        re.test(received)
          ? Promise.resolve()
          : new Promise((resolve, reject) => {
              waiting.push({ re, resolve });
              setTimeout(
                () =>
                  reject(
                    new Error(
                      `the guest never sent ${re}: ${JSON.stringify(received.slice(-200))}`,
                    ),
                  ),
                ANSWER_MS,
              ).unref();
            });
      return { ws, seen };
    };
    const logBefore = await logNext();
    const first = await open();
    first.ws.send(Buffer.from('\r'));
    await first.seen(/login: *$/);
    first.ws.send(Buffer.from('typed-here'));
    await first.seen(/login: typed-here/);
    first.ws.send(Buffer.from('\u0015'));
    // The serial log is still written while the console is held.
    await eventually(
      'the serial log to grow',
      async () => ((await logNext()) > logBefore ? true : undefined),
      ANSWER_MS,
    );
    // A second session while the first lasts: refused, in the controller's words.
    await expect(openWebSocket({ url, timeoutMs: 10_000 })).rejects.toMatchObject({
      status: 409,
      refusal: expect.stringMatching(/in use by another session/),
    });
    const closed = new Promise<void>((resolve) => first.ws.onClose(() => resolve()));
    first.ws.close();
    await closed;
    // Closing it freed the port: a second connection works.
    const second = await open();
    second.ws.send(Buffer.from('\r'));
    await second.seen(/login:/);
    second.ws.close();
  });

  it('is typed into with ppn-fleet vm console --interactive, left with Ctrl-]', async () => {
    const cli = spawn(process.execPath, [CLI_MAIN, 'vm', 'console', vmId, '--interactive'], {
      env: { PATH: process.env.PATH, TMPDIR: tmpdir(), VM_FLEET_OPS_ENDPOINT: OPS_URL },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const waiting: Array<() => void> = [];
    const check = (): void => waiting.splice(0).forEach((again) => again());
    cli.stdout.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), check()));
    cli.stderr.on('data', (chunk: Buffer) => ((stderr += chunk.toString()), check()));
    const exited = new Promise<number | null>((resolve) => cli.once('close', resolve));
    const until = (what: () => boolean, description: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${description}: ${JSON.stringify({ stdout, stderr })}`)),
          ANSWER_MS,
        );
        const again = (): void => {
          if (what()) {
            clearTimeout(timer);
            resolve();
          } else waiting.push(again);
        };
        again();
      });
    try {
      await until(() => stderr.includes('Ctrl-] leaves'), 'connection');
      cli.stdin.write('\r');
      await until(() => /login: *$/.test(stdout), 'login prompt');
      cli.stdin.write('cli-typed');
      await until(() => stdout.includes('login: cli-typed'), 'echo');
      cli.stdin.write('\u0015\u001d');
      expect(await exited).toBe(0);
      expect(stderr).toContain('left its serial console');
    } finally {
      cli.kill('SIGKILL');
    }
  });
});
