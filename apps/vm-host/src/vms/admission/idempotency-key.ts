import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_TTL_MS,
  SPAWN_KEY_PATTERN,
} from '@app/fleet-domain';
import { IdempotencyKeyInvalidError } from '../vms.errors';

/** A spawn's Idempotency-Key, split: the client key's hash and the request's. */
export interface SpawnKey {
  value: string;
  keyHash: string;
  requestHash: string;
}

/** The header's key, undefined when the header is absent; any other form is refused. */
export function parseSpawnKey(header: string | undefined): SpawnKey | undefined {
  if (header === undefined) return undefined;
  if (!SPAWN_KEY_PATTERN.test(header)) {
    throw new IdempotencyKeyInvalidError(
      `${IDEMPOTENCY_KEY_HEADER} must be <key_hash>.<request_hash>: 64 lowercase hex digits, a dot, 64 more (129 characters)`,
    );
  }
  const [keyHash, requestHash] = header.split('.');
  return { value: header, keyHash, requestHash };
}

/** The key a VM made at `createdAt` still answers to at `nowMs`; undefined once a day old. */
export function keptKey(
  vm: { idempotency_key: string | null; created_at: string },
  nowMs: number,
): SpawnKey | undefined {
  if (vm.idempotency_key === null || !SPAWN_KEY_PATTERN.test(vm.idempotency_key)) {
    return undefined;
  }
  const createdMs = Date.parse(vm.created_at);
  if (!(nowMs - createdMs < IDEMPOTENCY_KEY_TTL_MS)) return undefined;
  return parseSpawnKey(vm.idempotency_key);
}
