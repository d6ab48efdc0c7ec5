import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';
import {
  copiesHeld,
  freshestCopy,
  isLive,
  listedVms,
  liveSince,
  ramAvailableMb,
  rfc3339ToEpochNanos,
  VmState,
} from '@app/fleet-domain';
import { LiveNodesSource, NodesReading, VmCopyReading } from '../metrics/live-nodes.source';
import { NodesRepository } from './nodes.repository';

/** The nodes for the metrics, from the store's states: one read per scrape serves every gauge. */
@Injectable()
export class LiveNodesReader extends LiveNodesSource {
  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
  ) {
    super();
  }

  async read(): Promise<NodesReading> {
    const now = this.clock.now();
    const notBefore = liveSince(now);
    const states = await this.nodes.listAll();
    const wallNow = this.clock.wallNow();
    const held = copiesHeld(states, notBefore);
    let silentNodeVms = 0;
    const vmCopies: VmCopyReading[] = [];
    for (const { vm, node, silent_since_wall_ms } of listedVms(states, notBefore)) {
      if (silent_since_wall_ms !== undefined) silentNodeVms += 1;
      const copy = freshestCopy(held, vm.vm_id, node.node_id);
      const wanted = (vm.copies?.count ?? 0) > 0;
      if (!wanted && copy === undefined) continue;
      // A stopped VM is copied once: its copy's age says nothing stale, so no interval for it.
      const running = vm.state === VmState.Running;
      const copiedAtMs = copy === undefined ? null : epochMsOf(copy.copied_at);
      const startedAtMs = vm.started_at === null ? null : epochMsOf(vm.started_at);
      vmCopies.push({
        vm_id: vm.vm_id,
        node_id: node.node_id,
        every_s: wanted && running ? (vm.copies?.every_s ?? null) : null,
        wanted,
        copy_age_ms: copiedAtMs === null ? null : Math.max(0, wallNow - copiedAtMs),
        uncopied_ms:
          wanted && running && copy === undefined && startedAtMs !== null
            ? Math.max(0, wallNow - startedAtMs)
            : null,
      });
    }
    const live = states.filter((state) => isLive(state, notBefore));
    return {
      silentNodeVms,
      vmCopies,
      live: live.map((state) => ({
        node_id: state.node_id,
        // Holds past their deadline no longer count, though the sweep may not have ended them yet.
        ram_available_mb: ramAvailableMb(state, now),
        ram_total_mb: state.ram_total_mb,
        vm_states: state.vms.map((vm) => vm.state),
        heartbeat_age_ms: Math.max(0, now - state.received_at_ms),
        reserved: state.reserved,
        fenced_vms: state.fenced_vm_ids.length,
        credential: state.credential,
      })),
    };
  }
}

/** Milliseconds since the epoch of an RFC 3339 stamp; null when unreadable. */
function epochMsOf(stamp: string): number | null {
  const nanos = rfc3339ToEpochNanos(stamp);
  return nanos === null ? null : Number(nanos / 1_000_000n);
}
