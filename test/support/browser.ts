import { BrowserContext, Page, chromium } from 'playwright-core';
import { scratchFolder } from './scratch-folders';

/** Debian's chromium (`apt-get install chromium`): no browser is ever downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

/** Quiet and offline but for the pages it is sent to: no update, sync or background requests. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const open = new Set<BrowserContext>();

/**
 * Debian's chromium driven by playwright-core, with a new empty profile in a scratch folder of
 * the spec file (removed with it); `closeBrowsers` ends it, and the run's end any it missed (it
 * runs with the run's TMPDIR).
 */
export async function launchChromium(
  viewport: { width: number; height: number } = { width: 1280, height: 800 },
): Promise<BrowserContext> {
  const context = await chromium.launchPersistentContext(scratchFolder('chromium-profile-'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
    env: { ...process.env, TMPDIR: process.env.TMPDIR ?? '/tmp' },
  });
  open.add(context);
  context.on('close', () => open.delete(context));
  return context;
}

/** Closes every browser a spec launched. */
export async function closeBrowsers(): Promise<void> {
  await Promise.all([...open].map((context) => context.close()));
}

/**
 * The lines a VM page's terminal (xterm.js, `#serial`) shows: its screen's rows as xterm holds
 * them (the page's `window.ppnTerminal`), each with its trailing blanks cut, the blank rows below
 * the last written one left out.
 */
export async function terminalRows(page: Page): Promise<string[]> {
  const rows = await page.evaluate(() => {
    const term = (
      globalThis as unknown as {
        ppnTerminal?: {
          rows: number;
          buffer: {
            active: {
              viewportY: number;
              getLine(y: number): { translateToString(trim: boolean): string } | undefined;
            };
          };
        };
      }
    ).ppnTerminal;
    if (term === undefined) return [];
    const buffer = term.buffer.active;
    const lines: string[] = [];
    for (let y = buffer.viewportY; y < buffer.viewportY + term.rows; y++) {
      lines.push(buffer.getLine(y)?.translateToString(true) ?? '');
    }
    return lines;
  });
  while (rows.length > 0 && rows[rows.length - 1] === '') rows.pop();
  return rows;
}
