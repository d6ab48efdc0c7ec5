import { Socket } from 'node:net';

/**
 * What a TCP port said to one connection: `refused` (no connection), `closed` (accepted, then
 * closed or reset with nothing said: QEMU's user-mode forward accepts for the guest and drops
 * the connection when nothing listens in it), or `open` (it stayed open, or said `text`).
 */
export type PortAnswer = { kind: 'refused' } | { kind: 'closed' } | { kind: 'open'; text: string };

/** Most a probe reads of what a port says first (an SSH banner line is at most 255 bytes). */
const PROBE_TEXT_MAX = 256;

/** How long a probe with a request waits for the port to speak first (a banner) before sending it. */
export const PROBE_QUIET_MS = 500;

/**
 * Connects once to host:port and watches the connection for up to `watchMs` (or until it has
 * said a line): whether anything answers there, see PortAnswer. With `request`, sent when the
 * port has said nothing within PROBE_QUIET_MS: then `open` with text only if the service behind
 * it answered; a port forward that accepts and holds the connection while the guest's service
 * is not up yet says nothing (`open`, text '').
 */
export function probeTcpPort(
  host: string,
  port: number,
  watchMs: number,
  request?: string,
): Promise<PortAnswer> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let connected = false;
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    let quiet: NodeJS.Timeout | undefined;
    const settle = (answer: PortAnswer): void => {
      clearTimeout(timer);
      clearTimeout(quiet);
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(watchMs, () =>
      settle(connected ? { kind: 'open', text } : { kind: 'refused' }),
    );
    socket.once('connect', () => {
      connected = true;
      timer = setTimeout(() => settle({ kind: 'open', text }), watchMs);
      if (request !== undefined) {
        quiet = setTimeout(() => {
          if (text === '') socket.write(request);
        }, PROBE_QUIET_MS);
      }
    });
    socket.on('data', (chunk: Buffer) => {
      text = (text + chunk.toString('latin1')).slice(0, PROBE_TEXT_MAX);
      if (text.includes('\n') || text.length >= PROBE_TEXT_MAX) settle({ kind: 'open', text });
    });
    socket.once('error', () => undefined);
    socket.once('close', () => {
      if (!connected) settle({ kind: 'refused' });
      else settle(text === '' ? { kind: 'closed' } : { kind: 'open', text });
    });
    socket.connect({ host, port });
  });
}

/** One of the CLI's output streams: process.stdout and process.stderr fit. */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Everything the CLI takes from its process, as one provider: its environment, its output
 * streams and fetch, so that tests run it in-process with their own.
 */
export abstract class CliIo {
  abstract readonly env: NodeJS.ProcessEnv;
  abstract readonly stdout: OutputStream;
  abstract readonly stderr: OutputStream;
  abstract readonly fetch: typeof fetch;
  /** Waits `ms` (the --wait loop's pause); tests may skip the wait. */
  abstract sleep(ms: number): Promise<void>;
  /** A monotonic time in ms, for --wait's timeout. */
  abstract now(): number;
  /** What a VM's forwarded port answers (--wait, --wait-port); tests fake it. */
  probePort(host: string, port: number, watchMs: number, request?: string): Promise<PortAnswer> {
    return probeTcpPort(host, port, watchMs, request);
  }
  /** The wall clock in ms, to show how far off a time the API gave is; tests fix it. */
  wallNow(): number {
    return Date.now();
  }
  /** The keyboard, for an interactive console (raw mode on a TTY). */
  get stdin(): NodeJS.ReadStream {
    return process.stdin;
  }
}

/** The real process's. */
export class ProcessIo extends CliIo {
  readonly env = process.env;
  readonly stdout = process.stdout;
  readonly stderr = process.stderr;
  readonly fetch = globalThis.fetch;
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
  now(): number {
    return performance.now();
  }
}
