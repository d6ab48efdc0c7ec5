import { type NodeState, nodeStateFromHeartbeat } from '@app/fleet-domain';
import { heartbeat } from './heartbeat.factory';

/**
 * A node's state as the controller stores it after one heartbeat: desk-01 (16 GB, 4 GB used,
 * KVM), no VMs, holds, failures, credential, silent VMs, disk room or replicas; received at
 * 0 ms on both clocks unless the fields given say otherwise. Made by the domain's own
 * `nodeStateFromHeartbeat`, so its `record` is derived from the heartbeat's fields; the other
 * fields given (holds, failures, ...) are set after, as a later change would.
 */
export function nodeState(overrides: Partial<NodeState> = {}): NodeState {
  const receivedAtMs = overrides.received_at_ms ?? 0;
  const beat = heartbeat({
    node_id: overrides.node_id ?? 'n1',
    hostname: overrides.hostname ?? 'desk-01',
    wg_ip: overrides.wg_ip ?? '10.8.0.11',
    spawn_port: overrides.spawn_port ?? 9204,
    ram_total_mb: overrides.ram_total_mb ?? 16_384,
    ram_used_mb: overrides.ram_used_mb ?? 4_096,
    kvm_available: overrides.kvm_available ?? true,
    reserved: overrides.reserved ?? false,
    vms: overrides.vms ?? [],
    boot_id: overrides.boot_id ?? 'boot-1',
    timestamp_utc: overrides.timestamp_utc ?? '2026-08-06T12:00:00.000000Z',
  });
  const state = nodeStateFromHeartbeat(
    beat,
    receivedAtMs,
    undefined,
    overrides.received_at_wall_ms ?? receivedAtMs,
  );
  return { ...state, beat_gaps_ms: [5_000], ...overrides };
}
