import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { listedVms, liveSince, ramAvailableMb } from '@app/fleet-domain';
import { LiveNodeReading, LiveNodesSource } from '../metrics/live-nodes.source';
import { NodesRepository } from './nodes.repository';

/** The live nodes for the metrics, from the store's states, in one read per scrape. */
@Injectable()
export class LiveNodesReader extends LiveNodesSource {
  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
  ) {
    super();
  }

  async read(): Promise<LiveNodeReading[]> {
    const now = this.clock.now();
    const states = await this.nodes.listLive(liveSince(now));
    return states.map((state) => ({
      node_id: state.node_id,
      // Holds past their deadline no longer count, though the sweep may not have ended them yet.
      ram_available_mb: ramAvailableMb(state, now),
      ram_total_mb: state.ram_total_mb,
      vm_states: state.vms.map((vm) => vm.state),
      heartbeat_age_ms: Math.max(0, now - state.received_at_ms),
      reserved: state.reserved,
      credential: state.credential,
    }));
  }

  async silentNodeVms(): Promise<number> {
    const notBefore = liveSince(this.clock.now());
    let silent = 0;
    for (const listed of listedVms(await this.nodes.listAll(), notBefore)) {
      if (listed.silent_since_wall_ms !== undefined) silent += 1;
    }
    return silent;
  }
}
