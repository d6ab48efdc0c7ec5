import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { IncomingMessage, Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StartReplicaTransfer } from '@app/fleet-domain';
import { runTool } from '../qemu/run-tool';
import { CopyShutdown } from './copy-shutdown';
import { PeerTransport, Throttle } from './peer-transport';

/** Far below the 5 s a stop is given before SIGKILL, far above what an abort takes. */
const PROMPT_MS = 2_000;

/** Settles with how long `work` took after `trigger`, or rejects past PROMPT_MS. */
async function settledWithin(work: Promise<unknown>, trigger: () => void): Promise<number> {
  const outcome = work.then(
    () => 'resolved',
    (error: Error) => error.message,
  );
  const startedMs = performance.now();
  trigger();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('still running'), PROMPT_MS);
  });
  const how = await Promise.race([outcome, late]);
  clearTimeout(timer);
  expect(how).not.toBe('still running');
  return performance.now() - startedMs;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('CopyShutdown: a stopping agent ends its copies under way at once', () => {
  let root: string;
  let server: Server | undefined;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'copy-shutdown-'));
  });

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
    server = undefined;
    await rm(root, { recursive: true, force: true });
  });

  it('ends a copy being sent to a peer that takes its chunk slowly', async () => {
    const file = join(root, 'staged.qcow2');
    await writeFile(file, Buffer.alloc(1024 * 1024));
    const chunkArrived = new Promise<void>((resolve) => {
      server = createServer((request: IncomingMessage, response) => {
        if (request.method === 'POST') {
          response.setHeader('Content-Type', 'application/json');
          response.end(JSON.stringify({ transfer_id: 't1' }));
          return;
        }
        // The chunk: its first bytes read, then nothing (a peer far slower than the stop).
        request.once('data', () => {
          request.pause();
          resolve();
        });
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server!.address() as AddressInfo;
    const shutdown = new CopyShutdown();
    const transport = new PeerTransport(new Throttle(0), shutdown.signal);
    const sending = transport.send(
      { nodeId: 'node-b', address: `127.0.0.1:${port}`, grant: 'g' },
      'vm-0123456789abcdef',
      file,
      1024 * 1024,
      { kind: 'full' } as StartReplicaTransfer,
      () => undefined,
    );
    await chunkArrived;
    await settledWithin(sending, () => shutdown.onModuleDestroy());
    await expect(sending).rejects.toThrow(/node node-b at 127\.0\.0\.1:\d+: .*abort/i);
  });

  it("kills a copy's qemu-img (any tool run with its signal) and rejects", async () => {
    const pidFile = join(root, 'pid');
    const shutdown = new CopyShutdown();
    const running = runTool(
      'sh',
      ['-c', `echo $$ > ${pidFile}; exec sleep 30`],
      60_000,
      'qemu-img',
      shutdown.signal,
    );
    let pid = NaN;
    while (Number.isNaN(pid)) {
      pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim() || NaN);
      if (Number.isNaN(pid)) await new Promise((resolve) => setImmediate(resolve));
    }
    await settledWithin(running, () => shutdown.onModuleDestroy());
    await expect(running).rejects.toThrow(/^qemu-img failed/);
    // The tool ends (SIGTERM) and is reaped: no such process soon after (no event to wait on).
    const deadline = performance.now() + PROMPT_MS;
    while (isAlive(pid) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(isAlive(pid)).toBe(false);
  });
});
