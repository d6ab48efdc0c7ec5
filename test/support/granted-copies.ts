import type { HeartbeatReplica } from '@app/fleet-domain';
import { GrantedCopies } from '../../apps/fleet/src/nodes/granted-copies';
import type { RunningFleet } from './fleet-app';

/**
 * What the copy planner records when it pushes a plan: node `nodeId` granted to hold each of
 * `replicas`' VM copies, so the controller takes them from its heartbeat (GrantedCopies).
 */
export function grantCopies(
  fleet: RunningFleet,
  nodeId: string,
  replicas: readonly HeartbeatReplica[] | undefined,
): void {
  const granted = fleet.app.get(GrantedCopies);
  for (const replica of replicas ?? [])
    granted.granted(replica.vm_id, nodeId, fleet.clock.wallNow());
}
