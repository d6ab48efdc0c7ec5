import type { HeartbeatVerdict, NodeChange } from '@app/fleet-domain';
import type { GrantedCopies } from './granted-copies';

/**
 * The heartbeat's change with its `replicas` filtered once, before anything uses them (the
 * listing's copied_at, copy placement, restore planning, recovery): only copies the node was
 * granted or already held (GrantedCopies.keep).
 */
export function withGrantedReplicas(
  change: NodeChange<HeartbeatVerdict>,
  granted: GrantedCopies | undefined,
): NodeChange<HeartbeatVerdict> {
  if (!granted) return change;
  return (stored) => {
    const outcome = change(stored);
    if (!outcome.next || outcome.next.replicas.length === 0) return outcome;
    const replicas = granted.keep(outcome.next.node_id, outcome.next.replicas, stored?.replicas);
    if (replicas.length === outcome.next.replicas.length) return outcome;
    return { ...outcome, next: { ...outcome.next, replicas } };
  };
}
