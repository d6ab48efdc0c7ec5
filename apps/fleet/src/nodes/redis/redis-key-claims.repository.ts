import type Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import {
  KeyClaim,
  KeyClaims,
  KeyDispatch,
  OwnKeyClaim,
  decodeKeyDispatch,
  encodeKeyDispatch,
} from '../key-claims.repository';
import { RedisConnection } from './redis-connection';

/** One key per claimed Idempotency-Key: "<token>\n<spawn key>", expiring with the claim (PX). */
const claimKey = (keyHash: string) => `ppn-fleet:key-claim:${keyHash}`;
/** The VM a keyed create dispatched (see encodeKeyDispatch), expiring after a day. */
const dispatchKey = (keyHash: string) => `ppn-fleet:key-dispatch:${keyHash}`;

/**
 * SET NX PX, and what holds the key when it is taken, in one step: returns the value and the
 * milliseconds left of whichever claim holds the key afterwards (ARGV[1] when it was free).
 */
const CLAIM = `
local current = redis.call('GET', KEYS[1])
if current then return {current, redis.call('PTTL', KEYS[1])} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {ARGV[1], tonumber(ARGV[2])}`;

/** Deletes the claim only if it is still the one taken with token ARGV[1] (taken again after it expired: kept). */
const RELEASE = `
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. '\\n' then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/** Holds the claim ARGV[2] ms more only if it is still the one taken with token ARGV[1]. */
const RENEW = `
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. '\\n' then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

/** Deletes the dispatch record only if it still names vm ARGV[1] (its third line). */
const FORGET_DISPATCH = `
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local _, _, vm = string.find(current, '^[^\\n]*\\n[^\\n]*\\n([^\\n]*)')
if vm == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

type ClaimsRedis = Redis & {
  fleetClaimKey(key: string, value: string, holdMs: number): Promise<[string, number]>;
  fleetReleaseKey(key: string, token: string): Promise<number>;
  fleetRenewKey(key: string, token: string, holdMs: number): Promise<number>;
  fleetForgetDispatch(key: string, vmId: string): Promise<number>;
};

/** Claims in the Redis every controller shares; Redis ends a claim nobody released. */
export class RedisKeyClaims extends KeyClaims {
  private readonly redis: ClaimsRedis;

  constructor(private readonly connection: RedisConnection) {
    super();
    const client = connection.client;
    client.defineCommand('fleetClaimKey', { numberOfKeys: 1, lua: CLAIM });
    client.defineCommand('fleetReleaseKey', { numberOfKeys: 1, lua: RELEASE });
    client.defineCommand('fleetRenewKey', { numberOfKeys: 1, lua: RENEW });
    client.defineCommand('fleetForgetDispatch', { numberOfKeys: 1, lua: FORGET_DISPATCH });
    this.redis = client as ClaimsRedis;
  }

  async claim(keyHash: string, spawnKey: string, holdMs: number): Promise<KeyClaim> {
    const token = randomUUID();
    const [value, expiresInMs] = await this.connection.run(() =>
      this.redis.fleetClaimKey(claimKey(keyHash), `${token}\n${spawnKey}`, Math.ceil(holdMs)),
    );
    const [holder, holderSpawnKey] = value.split('\n');
    if (holder === token) return { kind: 'own', keyHash, token };
    return { kind: 'others', spawnKey: holderSpawnKey, expiresInMs };
  }

  async release(claim: OwnKeyClaim): Promise<void> {
    await this.connection.run(() =>
      this.redis.fleetReleaseKey(claimKey(claim.keyHash), claim.token),
    );
  }

  async renew(claim: OwnKeyClaim, holdMs: number): Promise<boolean> {
    const renewed = await this.connection.run(() =>
      this.redis.fleetRenewKey(claimKey(claim.keyHash), claim.token, Math.ceil(holdMs)),
    );
    return renewed === 1;
  }

  async recordDispatch(keyHash: string, dispatch: KeyDispatch, keepMs: number): Promise<void> {
    await this.connection.run(() =>
      this.redis.set(dispatchKey(keyHash), encodeKeyDispatch(dispatch), 'PX', Math.ceil(keepMs)),
    );
  }

  async forgetDispatch(keyHash: string, vmId: string): Promise<void> {
    await this.connection.run(() => this.redis.fleetForgetDispatch(dispatchKey(keyHash), vmId));
  }

  async dispatchOf(keyHash: string): Promise<KeyDispatch | undefined> {
    return decodeKeyDispatch(await this.connection.run(() => this.redis.get(dispatchKey(keyHash))));
  }
}
