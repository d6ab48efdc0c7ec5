import { IncomingMessage, OutgoingHttpHeaders, request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * The most of a reply the controller reads: a VmRecord or an agent's error is a few KiB, and
 * whatever answers at an agent's address must not make the controller buffer or parse more.
 */
export const AGENT_REPLY_MAX_BYTES = 64 * 1024;

/**
 * The most of a reply to a read whose size the operator or the node's VM count decides (a
 * console of up to MAX_CONSOLE_BYTES, each byte at most 3 in JSON; every VM's life cycle).
 */
export const AGENT_LARGE_REPLY_MAX_BYTES = 4 * 1024 * 1024;

/**
 * No TCP connection to the agent within the connect timeout (its SYN unanswered: a firewall
 * dropping, a host gone): the request provably never reached it.
 */
export class AgentConnectTimeoutError extends Error {
  readonly code = AGENT_CONNECT_TIMEOUT_CODE;

  constructor(waitedMs: number) {
    super(`no connection within ${Math.round(waitedMs)} ms`);
  }
}

/** The code of AgentConnectTimeoutError, as socket errors carry theirs. */
export const AGENT_CONNECT_TIMEOUT_CODE = 'ECONNECT_TIMEOUT';

/**
 * The agent's reply could not be used as HTTP: too large, a status outside 200-599, headers
 * fetch's Response refuses. Its message says which, for the controller's log only: the caller
 * is told the same words whatever answered (see VmHostClient).
 */
export class UnusableAgentReplyError extends Error {}

/** Statuses whose Response may not have a body. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * A fetch for the agent client (openapi-fetch's `fetch` option), over node:http rather than the
 * global fetch, for what the global fetch cannot do:
 * - a connect timeout of its own (`connectTimeoutMs`), shorter than the request's: a silent
 *   port fails fast with AgentConnectTimeoutError, which says nothing reached the agent, so
 *   another node may be asked; a request's signal firing before the connection was made is
 *   the same error;
 * - one connection per call, closed after it: no kept-alive socket the agent may have closed
 *   meanwhile, whose reset would make a spawn look cut off after it was sent;
 * - at most `maxReplyBytes` (AGENT_REPLY_MAX_BYTES unless the call says) read, nothing decompressed (none is asked for), no redirect
 *   followed: an "agent" answering 307 must not aim the controller (with the tenant's request)
 *   at any other address.
 * Once connected, the request's signal aborts it with the signal's reason (a TimeoutError).
 */
export async function agentFetch(
  request: Request,
  connectTimeoutMs: number,
  maxReplyBytes = AGENT_REPLY_MAX_BYTES,
): Promise<Response> {
  const signal = request.signal;
  signal.throwIfAborted();
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  // Reading the body does not heed the signal: one that fired meanwhile ends the call here.
  signal.throwIfAborted();
  const url = new URL(request.url);
  const headers: OutgoingHttpHeaders = Object.fromEntries(request.headers);
  headers.connection = 'close';
  if (body) headers['content-length'] = body.length;

  const startedAt = performance.now();
  return new Promise<Response>((resolve, reject) => {
    let connected = false;
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      cleanUp();
      req.destroy();
      reject(error);
    };
    const onAbort = () =>
      fail(
        connected
          ? (signal.reason as Error)
          : new AgentConnectTimeoutError(performance.now() - startedAt),
      );
    const cleanUp = () => {
      clearTimeout(connectTimer);
      signal.removeEventListener('abort', onAbort);
    };

    const req = httpRequest({
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port,
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers,
      agent: false,
    });
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('socket', (socket) => {
      if (!socket.connecting) {
        connected = true;
        return;
      }
      connectTimer = setTimeout(
        () => fail(new AgentConnectTimeoutError(connectTimeoutMs)),
        connectTimeoutMs,
      );
      socket.once('connect', () => {
        connected = true;
        clearTimeout(connectTimer);
      });
    });
    req.on('error', fail);
    let answered = false;
    // Closed without a reply it could read (an upgrade it did not ask for, a bare close): a
    // connection failure like a reset, once the request may have reached it.
    req.on('close', () => {
      if (!answered) fail(new Error('closed the connection without a reply'));
    });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      readReply(res, maxReplyBytes).then(
        (response) => {
          if (settled) return;
          settled = true;
          cleanUp();
          resolve(response);
        },
        (error: Error) => fail(error),
      );
    });
    req.end(body);
  });
}

async function readReply(res: IncomingMessage, maxReplyBytes: number): Promise<Response> {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) {
    res.destroy();
    throw new UnusableAgentReplyError(`answered with status ${status}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    size += (chunk as Buffer).length;
    if (size > maxReplyBytes) {
      res.destroy();
      throw new UnusableAgentReplyError(
        `answered ${status} with more than ${maxReplyBytes / 1024} KiB`,
      );
    }
    chunks.push(chunk as Buffer);
  }
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    return new Response(NULL_BODY_STATUSES.has(status) ? null : Buffer.concat(chunks), {
      status,
      statusText: res.statusMessage,
      headers,
    });
  } catch {
    // A header or status text fetch's Response refuses. Its message may quote the reply, which
    // goes nowhere, not even to the log.
    throw new UnusableAgentReplyError(
      `answered ${status} with a header or status text that cannot be read`,
    );
  }
}
