import { Logger } from '@nestjs/common';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { StoreUnavailableError } from '../store-unavailable.error';
import {
  EtcdCompare,
  EtcdKeyValue,
  EtcdOp,
  EtcdTxnResult,
  decodeKeyValue,
  encodeCompare,
  encodeOp,
  prefixEnd,
} from './etcd-wire';
import { EtcdRefusal, post } from './etcd-post';

/**
 * A small client of etcd's v3 API as JSON over HTTP (its gRPC gateway, served by etcd 3.4 on
 * the client URLs): no dependency, keys and values base64, 64-bit numbers as decimal strings.
 * Every call has a deadline and goes to the endpoint that last answered, then the others in
 * turn; a failure of all of them is a StoreUnavailableError (503) in the controller's own
 * words, never etcd's reply.
 */

export interface EtcdSettings {
  endpoints: readonly string[];
  username?: string;
  password?: string;
  /** For https:// endpoints: a CA instead of the system's, a client certificate and its key. */
  tls?: { ca?: string; cert?: string; key?: string };
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
    options: { rangeEnd?: string; revision?: number; minModRevision?: number } = {},
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
