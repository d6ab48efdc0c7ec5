import { readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { Throttle } from './peer-transport';
import { throttledFile } from './throttled-file';

/** This process's open descriptors on `path` (Linux /proc). */
function openOn(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }).length;
}

describe('throttledFile: a file read through the copy throttle', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'throttled-file-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('a file gone at open errors the stream given back (never an unhandled error that ends the agent)', async () => {
    const body = throttledFile(new Throttle(0), join(root, 'gone.qcow2'));
    const [error] = (await once(body, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ENOENT');
  });

  it('a reader that goes away closes the file', async () => {
    const path = join(root, 'disk.qcow2');
    await writeFile(path, Buffer.alloc(4 * 1024 * 1024, 1));
    // 64 KiB/s: the read is far from done when the reader leaves.
    const body = throttledFile(new Throttle(64 * 1024), path);
    body.on('data', () => undefined);
    await once(body, 'data');
    expect(openOn(path)).toBe(1);
    body.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(openOn(path)).toBe(0);
  });

  it('reads the range asked, counted', async () => {
    const path = join(root, 'disk.qcow2');
    await writeFile(path, Buffer.from('0123456789'));
    let counted = 0;
    const chunks: Buffer[] = [];
    const body = throttledFile(new Throttle(0), path, { start: 2, end: 5 }, (bytes) => {
      counted += bytes;
    });
    for await (const chunk of body) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('2345');
    expect(counted).toBe(4);
  });
});
