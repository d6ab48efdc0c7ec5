import { Logger } from '@nestjs/common';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StoreUnavailableError } from '../store-unavailable.error';

/**
 * A small client of etcd's v3 API as JSON over HTTP (its gRPC gateway, served by etcd 3.4 on
 * the client URLs): no dependency, keys and values base64, 64-bit numbers as decimal strings.
 * Every call has a deadline and goes to the endpoint that last answered, then the others in
 * turn; a failure of all of them is a StoreUnavailableError (503) in the controller's own
 * words, never etcd's reply.
 */

/** One call's deadline, per endpoint tried. */
const CALL_TIMEOUT_MS = 2_000;
/** Largest reply body read: a listing of every node stays far below. */
const MAX_REPLY_BYTES = 64 * 1024 * 1024;
/** Largest error text kept from an etcd reply, for the log only. */
const MAX_ERROR_TEXT = 200;

export interface EtcdKeyValue {
  key: string;
  value: string;
  modRevision: number;
  createRevision: number;
  lease: string;
}

export type EtcdCompare = {
  key: string;
  /** Compares every key in [key, rangeEnd) (none there: compared as revision 0). */
  rangeEnd?: string;
  target: 'MOD' | 'CREATE';
  result: 'EQUAL' | 'LESS' | 'GREATER';
  revision: number;
};

export type EtcdOp =
  | { range: { key: string; rangeEnd?: string; revision?: number; keysOnly?: boolean } }
  | { put: { key: string; value: string; lease?: string } }
  | { deleteRange: { key: string; rangeEnd?: string } };

export interface EtcdTxnResult {
  succeeded: boolean;
  revision: number;
  /** One per op run: the keys a range read (empty for a put or a delete). */
  ranges: EtcdKeyValue[][];
}

export interface EtcdSettings {
  endpoints: readonly string[];
  username?: string;
  password?: string;
  /** For https:// endpoints: a CA instead of the system's, a client certificate and its key. */
  tls?: { ca?: string; cert?: string; key?: string };
}

/** A refusal by etcd itself (it answered, with an error): not worth trying another endpoint. */
class EtcdRefusal extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

export const toBase64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
export const fromBase64 = (text: string | undefined): string =>
  Buffer.from(text ?? '', 'base64').toString('utf8');

/** The end of the range of every key that starts with `prefix` (etcd's "prefix" range end). */
export function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix, 'utf8');
  for (let index = bytes.length - 1; index >= 0; index--) {
    if (bytes[index] < 0xff) {
      const end = bytes.subarray(0, index + 1);
      end[index]++;
      return end.toString('latin1');
    }
  }
  return '\0';
}

/** The range end in base64, from its bytes (`prefixEnd` gives latin1). */
function rangeEndBase64(rangeEnd: string): string {
  return Buffer.from(rangeEnd, 'latin1').toString('base64');
}

/** A gateway reply's key-value, decoded (absent numbers are 0: the gateway leaves zeros out). */
export function decodeKeyValue(raw: unknown): EtcdKeyValue {
  const kv = (raw ?? {}) as Record<string, unknown>;
  const text = (field: string) => (typeof kv[field] === 'string' ? kv[field] : undefined);
  return {
    key: fromBase64(text('key')),
    value: fromBase64(text('value')),
    modRevision: Number(kv.mod_revision ?? 0),
    createRevision: Number(kv.create_revision ?? 0),
    lease: typeof kv.lease === 'string' || typeof kv.lease === 'number' ? String(kv.lease) : '0',
  };
}

/** An op as the gateway takes it. */
export function encodeOp(op: EtcdOp): Record<string, unknown> {
  if ('range' in op) {
    const { key, rangeEnd, revision, keysOnly } = op.range;
    return {
      request_range: {
        key: toBase64(key),
        ...(rangeEnd !== undefined && { range_end: rangeEndBase64(rangeEnd) }),
        ...(revision !== undefined && { revision: String(revision) }),
        ...(keysOnly && { keys_only: true }),
      },
    };
  }
  if ('put' in op) {
    const { key, value, lease } = op.put;
    return {
      request_put: { key: toBase64(key), value: toBase64(value), ...(lease && { lease }) },
    };
  }
  const { key, rangeEnd } = op.deleteRange;
  return {
    request_delete_range: {
      key: toBase64(key),
      ...(rangeEnd !== undefined && { range_end: rangeEndBase64(rangeEnd) }),
    },
  };
}

export function encodeCompare(compare: EtcdCompare): Record<string, unknown> {
  return {
    key: toBase64(compare.key),
    ...(compare.rangeEnd !== undefined && { range_end: rangeEndBase64(compare.rangeEnd) }),
    target: compare.target,
    result: compare.result,
    [compare.target === 'MOD' ? 'mod_revision' : 'create_revision']: String(compare.revision),
  };
}

export class EtcdClient {
  private readonly logger = new Logger('etcd');
  /** The endpoint tried first: the last one that answered. */
  private current = 0;
  private token?: string;
  private authenticating?: Promise<string>;
  private available?: boolean;
  private closed = false;
  /** Connections kept open between calls (a heartbeat is a few calls), ended by close(). */
  private readonly agents: { http: HttpAgent; https: HttpsAgent };

  constructor(private readonly settings: EtcdSettings) {
    this.agents = {
      http: new HttpAgent({ keepAlive: true, maxSockets: 64 }),
      https: new HttpsAgent({ keepAlive: true, maxSockets: 64, ...settings.tls }),
    };
  }

  /** The endpoints as logs and 503s show them (URLs without credentials). */
  get describe(): string {
    return this.settings.endpoints.join(',');
  }

  close(): void {
    this.closed = true;
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  async range(
    key: string,
    options: { rangeEnd?: string; revision?: number } = {},
  ): Promise<{ kvs: EtcdKeyValue[]; revision: number }> {
    const result = await this.txn([], [{ range: { key, ...options } }]);
    return { kvs: result.ranges[0], revision: result.revision };
  }

  /** Every key under `prefix`, at `revision` if given. */
  rangePrefix(
    prefix: string,
    revision?: number,
  ): Promise<{ kvs: EtcdKeyValue[]; revision: number }> {
    return this.range(prefix, { rangeEnd: prefixEnd(prefix), revision });
  }

  async txn(
    compare: EtcdCompare[],
    success: EtcdOp[],
    failure: EtcdOp[] = [],
  ): Promise<EtcdTxnResult> {
    const reply = (await this.call('/v3/kv/txn', {
      compare: compare.map(encodeCompare),
      success: success.map(encodeOp),
      failure: failure.map(encodeOp),
    })) as {
      header?: { revision?: string };
      succeeded?: boolean;
      responses?: Array<{ response_range?: { kvs?: unknown[] } }>;
    };
    return {
      succeeded: reply.succeeded === true,
      revision: Number(reply.header?.revision ?? 0),
      ranges: (reply.responses ?? []).map((response) =>
        (response.response_range?.kvs ?? []).map(decodeKeyValue),
      ),
    };
  }

  /** A lease of `ttlS` seconds (etcd raises it to its minimum, 2 s by default): its id. */
  async grantLease(ttlS: number): Promise<string> {
    const reply = (await this.call('/v3/lease/grant', { TTL: String(Math.ceil(ttlS)) })) as {
      ID?: string;
    };
    if (!reply.ID) throw this.unavailable('etcd granted no lease');
    return reply.ID;
  }

  /** Seconds the lease has left (0 if it is gone). */
  async leaseTimeToLive(id: string): Promise<number> {
    const reply = (await this.call('/v3/lease/timetolive', { ID: id })) as { TTL?: string };
    return Math.max(0, Number(reply.TTL ?? 0));
  }

  /** Renews the lease once (the gateway's keep-alive stream, one message): seconds left, 0 if gone. */
  async keepAliveLease(id: string): Promise<number> {
    const reply = (await this.call('/v3/lease/keepalive', { ID: id })) as {
      result?: { TTL?: string };
    };
    return Math.max(0, Number(reply.result?.TTL ?? 0));
  }

  async revokeLease(id: string): Promise<void> {
    try {
      await this.call('/v3/lease/revoke', { ID: id });
    } catch {
      // Gone already, or etcd away: the lease ends by itself at its TTL.
    }
  }

  /** Whether some endpoint answers (and takes the credentials): what the start checks. */
  async check(): Promise<void> {
    await this.range('ppn-fleet/');
  }

  /**
   * POSTs `body` to `path` on the current endpoint, then each other in turn; with credentials,
   * authenticated first (again once, should etcd answer that the token expired).
   */
  private async call(path: string, body: unknown): Promise<unknown> {
    if (this.closed) throw this.unavailable('the controller is stopping');
    const endpoints = this.settings.endpoints;
    let lastReason = 'no endpoint';
    for (let tried = 0; tried < endpoints.length; tried++) {
      const index = (this.current + tried) % endpoints.length;
      try {
        const reply = await this.authorised(endpoints[index], path, body);
        this.current = index;
        this.changed(true);
        return reply;
      } catch (error) {
        if (error instanceof EtcdRefusal && error.status < 500) {
          // etcd answered: the request itself (or the credentials) is at fault, not the endpoint.
          this.changed(true);
          throw this.refused(error);
        }
        lastReason =
          error instanceof EtcdRefusal
            ? `${endpoints[index]}: etcd answered HTTP ${error.status}${/leader/i.test(error.detail) ? ' (no leader: its cluster lost its majority?)' : ''}`
            : `${endpoints[index]}: ${(error as Error).message}`;
      }
    }
    this.changed(false, lastReason);
    throw this.unavailable(`no endpoint answered (last: ${lastReason})`);
  }

  private async authorised(endpoint: string, path: string, body: unknown): Promise<unknown> {
    if (this.settings.username === undefined) return post(this.agents, endpoint, path, body);
    for (let attempt = 0; ; attempt++) {
      const token = await this.authToken(endpoint);
      try {
        return await post(this.agents, endpoint, path, body, token);
      } catch (error) {
        // The token expired (etcd's simple tokens last 5 minutes unused): once more, anew.
        const expired =
          error instanceof EtcdRefusal && /invalid auth token|token/i.test(error.detail);
        if (!expired || attempt > 0) throw error;
        if (this.token === token) this.token = undefined;
      }
    }
  }

  private authToken(endpoint: string): Promise<string> {
    if (this.token) return Promise.resolve(this.token);
    this.authenticating ??= post(this.agents, endpoint, '/v3/auth/authenticate', {
      name: this.settings.username,
      password: this.settings.password ?? '',
    })
      .then((reply) => {
        const token = (reply as { token?: string }).token;
        if (!token) throw new EtcdRefusal(401, 'authentication gave no token');
        this.token = token;
        return token;
      })
      .finally(() => (this.authenticating = undefined));
    return this.authenticating;
  }

  private refused(refusal: EtcdRefusal): StoreUnavailableError {
    const detail = refusal.detail;
    let reason = `etcd refused the request (HTTP ${refusal.status})`;
    if (/authentication failed|invalid user ID or password/i.test(detail))
      reason =
        'etcd refused the credentials: check VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD_FILE';
    else if (/permission denied/i.test(detail))
      reason = `etcd denied VM_FLEET_ETCD_USERNAME access to the ppn-fleet/ keys`;
    else if (/user name is empty|token/i.test(detail))
      reason =
        'etcd requires credentials: set VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD_FILE';
    else if (/too many operations in txn/i.test(detail))
      reason =
        "a change needs more operations than etcd's --max-txn-ops allows (a node gaining or losing that many VM ids at once): raise it";
    else if (/no leader|leader changed|timed out|not capable/i.test(detail))
      reason = 'etcd has no leader (its cluster lost its majority)';
    this.logger.warn(`etcd at ${this.describe}: ${reason} (etcd said: ${detail})`);
    return this.unavailable(reason);
  }

  private unavailable(reason: string): StoreUnavailableError {
    return new StoreUnavailableError(
      `fleet state store (etcd at ${this.describe}) unavailable: ${reason}`,
    );
  }

  private changed(available: boolean, reason?: string): void {
    if (this.closed || this.available === available) return;
    const before = this.available;
    this.available = available;
    if (available) {
      this.logger.log(
        `etcd at ${this.describe} ${before === false ? 'restored' : 'connected'}: fleet state is shared`,
      );
    } else {
      this.logger.warn(
        `etcd at ${this.describe} ${before === true ? 'lost' : 'unreachable'} (${reason}); state routes answer 503 until it is back`,
      );
    }
  }
}

/** One POST with a deadline: the reply's JSON, or EtcdRefusal for an error etcd answered. */
function post(
  agents: { http: HttpAgent; https: HttpsAgent },
  endpoint: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<unknown> {
  const url = new URL(path, endpoint);
  const payload = Buffer.from(JSON.stringify(body));
  const https = url.protocol === 'https:';
  const send = https ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        agent: https ? agents.https : agents.http,
        timeout: CALL_TIMEOUT_MS,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          ...(token && { authorization: token }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_REPLY_BYTES) {
            req.destroy(new Error(`reply larger than ${MAX_REPLY_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            reject(new Error(`HTTP ${res.statusCode}, no JSON reply: not etcd's v3 gateway?`));
            return;
          }
          const status = res.statusCode ?? 0;
          const error = (parsed as { error?: unknown; message?: unknown }) ?? {};
          if (status !== 200 || typeof error.error === 'string') {
            const said = [error.message, error.error].find((text) => typeof text === 'string');
            const detail = (said ?? '').slice(0, MAX_ERROR_TEXT);
            reject(new EtcdRefusal(status, detail));
            return;
          }
          resolve(parsed);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CALL_TIMEOUT_MS} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) => reject(new Error(describeNetError(error))));
    req.end(payload);
  });
}

/** A connection's failure in a few words: its code, and what a TLS one means. */
function describeNetError(error: NodeJS.ErrnoException): string {
  const code = error.code ?? error.message;
  if (/CERT|SIGNATURE|SELF_SIGNED|ISSUER/.test(code))
    return `${code}: its certificate is not trusted (VM_FLEET_ETCD_CA_FILE names the CA that signed it)`;
  if (/ALERT_CERTIFICATE_REQUIRED|ALERT_BAD_CERTIFICATE|ALERT_UNKNOWN_CA/.test(code))
    return `${code}: it refused the controller's certificate (VM_FLEET_ETCD_CERT_FILE and VM_FLEET_ETCD_KEY_FILE)`;
  return code;
}
