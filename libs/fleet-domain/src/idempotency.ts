import { CreateVmRequest } from './wire/create-vm-request';

/** The request header a client retries a create with, and the one the controller sends agents. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** What a client may send as `Idempotency-Key` on POST /v1/vms. */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const IDEMPOTENCY_KEY_RULE = '1-128 characters of A-Z a-z 0-9 . _ : -';

/**
 * What the controller sends an agent as `Idempotency-Key` on POST /v1/spawn, and what the
 * agent reports back with the VM: `<sha256 hex of the client's key>.<sha256 hex of
 * canonicalCreateRequest>`. The client's key itself never leaves the controller.
 */
export const SPAWN_KEY_PATTERN = /^[0-9a-f]{64}\.[0-9a-f]{64}$/;
export const SPAWN_KEY_RULE = '<64 lowercase hex>.<64 lowercase hex>';

/** A key is honoured for a day after its VM was made; the agent stops reporting it then. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The request as both sides hash it: the CreateVmRequest fields in contract order, defaults
 * applied, so that `{"prefer_kvm":false}` and an absent `prefer_kvm` are the same request.
 * `ports` only when some are asked for, and `disk_gb` only when given, so a create without
 * them hashes as it always did.
 */
export function canonicalCreateRequest(request: CreateVmRequest): string {
  const ports = (request.ports ?? []).map(({ guest_port, protocol, host_port }) => ({
    guest_port,
    protocol,
    host_port: host_port ?? null,
  }));
  return JSON.stringify({
    vm_type: request.vm_type,
    ram_mb: request.ram_mb,
    vcpu_count: request.vcpu_count,
    prefer_kvm: request.prefer_kvm ?? false,
    preferred_node: request.preferred_node ?? null,
    tenant_id: request.tenant_id ?? null,
    ...(ports.length > 0 ? { ports } : {}),
    ...(request.disk_gb === undefined || request.disk_gb === null
      ? {}
      : { disk_gb: request.disk_gb }),
  });
}

/** The part of a spawn key that names the client's key (the rest names the request). */
export function keyHashOf(spawnKey: string): string {
  return spawnKey.slice(0, spawnKey.indexOf('.'));
}
