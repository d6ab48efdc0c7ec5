import { createHash, randomUUID } from 'node:crypto';
import { CreateVmRequest, canonicalCreateRequest } from '@app/fleet-domain';

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The Idempotency-Key the controller sends the agent for a client's key and request:
 * `<sha256(key)>.<sha256(canonical request)>`. Without a client key, a random one: every VM
 * is spawned with a key, so a heartbeat can end the VM's RAM hold even before the agent's
 * answer is back.
 */
export function spawnKeyOf(request: CreateVmRequest, clientKey: string = randomUUID()): string {
  return `${sha256Hex(clientKey)}.${sha256Hex(canonicalCreateRequest(request))}`;
}
