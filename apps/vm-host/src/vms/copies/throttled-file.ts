import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream';
import type { Transform } from 'node:stream';

/**
 * A file's bytes (or a range of them) through a throttle. pipeline, never pipe: a file gone
 * at open (ENOENT) errors the stream returned instead of going unhandled (which would end the
 * agent), and a reader that goes away (the stream returned destroyed) closes the file.
 */
export function throttledFile(
  throttle: { stream(counted?: (bytes: number) => void): Transform },
  path: string,
  range?: { start: number; end: number },
  counted?: (bytes: number) => void,
): Transform {
  const body = throttle.stream(counted);
  pipeline(createReadStream(path, range), body, () => undefined);
  return body;
}
