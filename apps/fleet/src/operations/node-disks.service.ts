import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { NodeDiskRoom, compareIds, liveSince } from '@app/fleet-domain';
import { NodesRepository } from '../nodes/nodes.repository';

/** The live nodes' disk room, as their last heartbeats reported it. */
@Injectable()
export class NodeDisksService {
  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
  ) {}

  /** Every live node, by id, as GET /v1/nodes lists them. */
  async list(): Promise<NodeDiskRoom[]> {
    const live = await this.nodes.listLive(liveSince(this.clock.now()));
    return live
      .map((node) => ({ node_id: node.node_id, disk_room: node.disk_room }))
      .sort((a, b) => compareIds(a.node_id, b.node_id));
  }
}
