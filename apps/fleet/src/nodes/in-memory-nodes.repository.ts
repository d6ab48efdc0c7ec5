import { Injectable } from '@nestjs/common';
import {
  HeartbeatVerdict,
  NodeHeartbeat,
  NodeRecord,
  NodeState,
  VmRecord,
  judgeHeartbeat,
  nodeStateFromHeartbeat,
  withDispatchedVm,
  withHold,
  withoutHold,
  withoutVm,
} from '@app/fleet-domain';
import { NodesRepository } from './nodes.repository';

/** Nodes examined per slice of a sweep before the event loop gets a turn. */
const SWEEP_SLICE = 5_000;

/** The documented default: the fleet lives in this process and a restart forgets it. */
@Injectable()
export class InMemoryNodesRepository extends NodesRepository {
  private readonly nodes = new Map<string, NodeState>();

  applyHeartbeat(heartbeat: NodeHeartbeat, receivedAtMs: number): Promise<HeartbeatVerdict> {
    const stored = this.nodes.get(heartbeat.node_id);
    const verdict = judgeHeartbeat(stored, heartbeat);
    if (verdict.kind !== 'out-of-order') {
      this.nodes.set(heartbeat.node_id, nodeStateFromHeartbeat(heartbeat, receivedAtMs, stored));
    }
    return Promise.resolve(verdict);
  }

  listLive(notBeforeMs: number): Promise<NodeState[]> {
    const live: NodeState[] = [];
    for (const state of this.nodes.values()) {
      if (state.received_at_ms >= notBeforeMs) live.push(state);
    }
    return Promise.resolve(live);
  }

  listLiveRecords(notBeforeMs: number): Promise<NodeRecord[]> {
    const records: NodeRecord[] = [];
    for (const state of this.nodes.values()) {
      if (state.received_at_ms >= notBeforeMs) records.push(state.record);
    }
    return Promise.resolve(records);
  }

  findLive(nodeId: string, notBeforeMs: number): Promise<NodeState | undefined> {
    return Promise.resolve(this.live(nodeId, notBeforeMs));
  }

  /**
   * Walks the store in slices, yielding to the event loop between them, so dropping a whole
   * fleet at once never holds up heartbeats. Each node is judged when it is reached: one that
   * beat meanwhile stays.
   */
  async dropStale(notBeforeMs: number): Promise<NodeState[]> {
    const dropped: NodeState[] = [];
    let examined = 0;
    for (const [nodeId, state] of this.nodes) {
      if (state.received_at_ms < notBeforeMs) {
        this.nodes.delete(nodeId);
        dropped.push(state);
      }
      if (++examined % SWEEP_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    return dropped;
  }

  hold(
    nodeId: string,
    holdId: string,
    ramMb: number,
    requiredFreeMb: number,
    notBeforeMs: number,
  ): Promise<boolean> {
    const state = this.live(nodeId, notBeforeMs);
    const held = state && withHold(state, holdId, ramMb, requiredFreeMb);
    if (held) this.nodes.set(nodeId, held);
    return Promise.resolve(Boolean(held));
  }

  recordDispatchedVm(nodeId: string, holdId: string, vm: VmRecord): Promise<void> {
    this.update(nodeId, (state) => withDispatchedVm(state, holdId, vm));
    return Promise.resolve();
  }

  releaseHold(nodeId: string, holdId: string): Promise<void> {
    this.update(nodeId, (state) => withoutHold(state, holdId));
    return Promise.resolve();
  }

  removeVm(nodeId: string, vmId: string): Promise<void> {
    this.update(nodeId, (state) => withoutVm(state, vmId));
    return Promise.resolve();
  }

  private live(nodeId: string, notBeforeMs: number): NodeState | undefined {
    const state = this.nodes.get(nodeId);
    return state && state.received_at_ms >= notBeforeMs ? state : undefined;
  }

  private update(nodeId: string, change: (state: NodeState) => NodeState): void {
    const state = this.nodes.get(nodeId);
    if (state) this.nodes.set(nodeId, change(state));
  }
}
