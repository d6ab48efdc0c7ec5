import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { isLive, listedVms, liveSince, ramAvailableMb } from '@app/fleet-domain';
import { LiveNodesSource, NodesReading } from '../metrics/live-nodes.source';
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
    let silentNodeVms = 0;
    for (const listed of listedVms(states, notBefore)) {
      if (listed.silent_since_wall_ms !== undefined) silentNodeVms += 1;
    }
    const live = states.filter((state) => isLive(state, notBefore));
    return {
      silentNodeVms,
      live: live.map((state) => ({
        node_id: state.node_id,
        // Holds past their deadline no longer count, though the sweep may not have ended them yet.
        ram_available_mb: ramAvailableMb(state, now),
        ram_total_mb: state.ram_total_mb,
        vm_states: state.vms.map((vm) => vm.state),
        heartbeat_age_ms: Math.max(0, now - state.received_at_ms),
        reserved: state.reserved,
        credential: state.credential,
      })),
    };
  }
}
