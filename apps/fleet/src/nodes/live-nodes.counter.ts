import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { liveSince } from '@app/fleet-domain';
import { LiveNodeCount } from '../metrics/live-node-count';
import { NodesRepository } from './nodes.repository';

/** Counts the live nodes for the metrics, from the store's records (the cheapest read). */
@Injectable()
export class LiveNodesCounter extends LiveNodeCount {
  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
  ) {
    super();
  }

  async count(): Promise<number> {
    return (await this.nodes.listLiveRecords(liveSince(this.clock.now()))).length;
  }
}
