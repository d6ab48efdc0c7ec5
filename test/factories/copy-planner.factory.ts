import {
  CopyPlan,
  HeartbeatReplica,
  HeartbeatVm,
  NodeState,
  nodeStateFromHeartbeat,
} from '@app/fleet-domain';
import { CopyPlannerService } from '../../apps/fleet/src/copies/copy-planner.service';
import { GrantedCopies } from '../../apps/fleet/src/nodes/granted-copies';
import { Leadership } from '../../apps/fleet/src/nodes/leadership';
import { NodeDrains } from '../../apps/fleet/src/nodes/node-drains.repository';
import { SharedCopyGrants } from '../../apps/fleet/src/nodes/shared-copy-grants';
import { NodeTokens } from '../../apps/fleet/src/nodes/node-tokens';
import { NodesRepository } from '../../apps/fleet/src/nodes/nodes.repository';
import { VmHostClient } from '../../apps/fleet/src/vms/vm-host.client';
import { FakeClock } from '../support/fake-clock';
import { heartbeat } from './heartbeat.factory';

export const PLANNER_SECRET = 'node-secret-0123456789abcdef0123456789abcdef';

/**
 * A node as the copy planner reads it: one heartbeat from `node_id` (wg_ip 10.8.0.<its last
 * letter's place>, spawn port 9100) with `vms`, disk room `committable_mb` free for copies
 * (null: none reported) and the `replicas` it holds, received now on `clock`.
 */
export function copiesNode(
  clock: FakeClock,
  node_id: string,
  vms: HeartbeatVm[],
  extra: { replicas?: HeartbeatReplica[]; committable_mb?: number | null; wg_ip?: string } = {},
): NodeState {
  const committable = extra.committable_mb === undefined ? 50_000 : extra.committable_mb;
  return nodeStateFromHeartbeat(
    heartbeat({
      node_id,
      wg_ip: extra.wg_ip ?? `10.8.0.${node_id.charCodeAt(node_id.length - 1) - 96}`,
      spawn_port: 9100,
      vms,
      ...(committable === null
        ? {}
        : {
            disk_room: {
              room_mb: 60_000,
              committed_mb: 10_000,
              committable_mb: committable,
              reserve_mb: 2048,
              overcommit: 1,
            },
          }),
      replicas: extra.replicas ?? [],
    }),
    clock.now(),
    undefined,
    clock.wallNow(),
    'own',
  );
}

/** A plan the planner pushed: to which node, for which VM. */
export interface SentPlan {
  node: string;
  vm: string;
  plan: CopyPlan;
}

/**
 * A CopyPlannerService over the nodes `nodes()` gives at each call, whose agent calls are recorded in
 * `sent` and answered `unknown` for the VMs in `unknownVms`, else `set`.
 */
export function copyPlanner(
  clock: FakeClock,
  nodes: () => NodeState[],
  sent: SentPlan[],
  unknownVms: ReadonlySet<string> = new Set(),
  granted?: GrantedCopies,
  /** In etcd mode: the election it plans under, the store its grants are shared in. */
  shared: { leadership?: Leadership; grants?: SharedCopyGrants } = {},
  /** The drained nodes, as the planner reads them (absent: none). */
  drains?: NodeDrains,
): CopyPlannerService {
  const repository = {
    listLive: (notBeforeMs: number) =>
      Promise.resolve(nodes().filter((state) => state.received_at_ms >= notBeforeMs)),
  } as unknown as NodesRepository;
  const client = {
    putCopyPlan: (target: NodeState, vm: string, plan: CopyPlan) => {
      sent.push({ node: target.node_id, vm, plan });
      return Promise.resolve(unknownVms.has(vm) ? 'unknown' : 'set');
    },
  } as unknown as VmHostClient;
  return new CopyPlannerService(
    repository,
    new NodeTokens({ secret: PLANNER_SECRET }),
    client,
    clock,
    granted,
    shared.leadership,
    shared.grants,
    drains,
  );
}
