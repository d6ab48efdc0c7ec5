import { IDEMPOTENCY_KEY_PATTERN, canonicalCreateRequest, keyHashOf } from './idempotency';

describe('canonicalCreateRequest', () => {
  it('writes the fields in contract order with defaults applied', () => {
    expect(canonicalCreateRequest({ vcpu_count: 2, ram_mb: 2048, vm_type: 'web' } as never)).toBe(
      '{"vm_type":"web","ram_mb":2048,"vcpu_count":2,"prefer_kvm":false,"preferred_node":null,"tenant_id":null}',
    );
  });

  it('is the same for a request with its defaults spelled out, and differs for another one', () => {
    const short = { vm_type: 'web', ram_mb: 2048, vcpu_count: 2, prefer_kvm: false };
    const spelled = { ...short, preferred_node: null, tenant_id: null };
    expect(canonicalCreateRequest(spelled)).toBe(canonicalCreateRequest(short));
    expect(canonicalCreateRequest({ ...short, tenant_id: 'acme' })).not.toBe(
      canonicalCreateRequest(short),
    );
  });

  it('names disk_gb only when it is given, after the other fields', () => {
    const short = { vm_type: 'web', ram_mb: 2048, vcpu_count: 2, prefer_kvm: false };
    expect(canonicalCreateRequest({ ...short, disk_gb: 20 })).toBe(
      '{"vm_type":"web","ram_mb":2048,"vcpu_count":2,"prefer_kvm":false,"preferred_node":null,"tenant_id":null,"disk_gb":20}',
    );
    expect(canonicalCreateRequest({ ...short, disk_gb: 20 })).not.toBe(
      canonicalCreateRequest({ ...short, disk_gb: 30 }),
    );
  });
});

describe('idempotency keys', () => {
  it('accepts 1-128 characters of A-Z a-z 0-9 . _ : - and nothing else', () => {
    for (const key of ['a', 'order-42:retry_1.x', 'k'.repeat(128)]) {
      expect(IDEMPOTENCY_KEY_PATTERN.test(key)).toBe(true);
    }
    for (const key of ['', 'k'.repeat(129), 'with space', 'slash/', 'new\nline', 'é']) {
      expect(IDEMPOTENCY_KEY_PATTERN.test(key)).toBe(false);
    }
  });

  it('names the client key by the first half of a spawn key', () => {
    expect(keyHashOf(`${'a'.repeat(64)}.${'b'.repeat(64)}`)).toBe('a'.repeat(64));
  });
});
