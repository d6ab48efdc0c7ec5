import { IdempotencyKeyInvalidError } from '../vms.errors';
import { keptKey, parseSpawnKey } from './idempotency-key';

const keyHash = 'a'.repeat(64);
const requestHash = '0123456789abcdef'.repeat(4);

describe('parseSpawnKey', () => {
  it('is undefined without the header, and splits the two hashes', () => {
    expect(parseSpawnKey(undefined)).toBeUndefined();
    expect(parseSpawnKey(`${keyHash}.${requestHash}`)).toEqual({
      value: `${keyHash}.${requestHash}`,
      keyHash,
      requestHash,
    });
  });

  it.each([
    '',
    'retry-1',
    keyHash,
    `${keyHash}.${requestHash}.`,
    `${keyHash.toUpperCase()}.${requestHash}`,
    `${keyHash}.${requestHash.slice(1)}`,
    `${keyHash}, ${keyHash}.${requestHash}`,
    `${keyHash}.${requestHash}\n`,
  ])('refuses %j, naming Idempotency-Key', (header) => {
    expect(() => parseSpawnKey(header)).toThrow(
      new IdempotencyKeyInvalidError(
        'Idempotency-Key must be <key_hash>.<request_hash>: 64 lowercase hex digits, a dot, 64 more (129 characters)',
      ),
    );
  });
});

describe('keptKey', () => {
  const created = '2026-08-06T12:00:00.000Z';
  const createdMs = Date.parse(created);
  const vm = { idempotency_key: `${keyHash}.${requestHash}`, created_at: created };

  it('is the VM key for a day after the VM was created, then forgotten', () => {
    expect(keptKey(vm, createdMs)?.keyHash).toBe(keyHash);
    expect(keptKey(vm, createdMs + 24 * 3600_000 - 1)?.requestHash).toBe(requestHash);
    expect(keptKey(vm, createdMs + 24 * 3600_000)).toBeUndefined();
  });

  it('is undefined for a VM made without one, or with a key that is not one', () => {
    expect(keptKey({ ...vm, idempotency_key: null }, createdMs)).toBeUndefined();
    expect(keptKey({ ...vm, idempotency_key: 'edited' }, createdMs)).toBeUndefined();
    expect(keptKey({ ...vm, created_at: 'not a time' }, createdMs)).toBeUndefined();
  });
});
