import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import {
  MAX_MESH_ROUTES_PER_NODE,
  MeshRoute,
  MeshTable,
  NODE_STALE_AFTER_MS,
  liveSince,
  meshRoutesFor,
  meshTable,
} from '@app/fleet-domain';
import { NodesRepository } from './nodes.repository';

/** The table is built from the store at most this often, shared by every heartbeat answered meanwhile. */
const TABLE_MAX_AGE_MS = 1_000;
/**
 * From a store that tells when the table may have changed (routesGeneration), an unchanged
 * table is kept this long, and never past the moment its oldest node would stop being live:
 * rebuilt each second, 10,000 nodes cost a few percent of the CPU their heartbeats take. A
 * bound all the same, should a write ever change the table without the store saying so.
 */
const UNCHANGED_TABLE_MAX_AGE_MS = 10_000;

/**
 * The routing mesh's table for heartbeat answers (`mesh_routes`): the live nodes' published
 * ports, each node told the others' (docs/vms.md "Reaching a service"). One read of the live
 * nodes per second at most, whatever the number of heartbeats; a port two VMs publish is left
 * out, warned once until it is no longer published twice; so are the routes of nodes claiming one
 * mesh address, and a node's ports past MAX_MESH_ROUTES_PER_NODE.
 */
@Injectable()
export class MeshRoutes {
  private readonly logger = new Logger('RoutingMesh');
  private table?: {
    builtAtMs: number;
    /** The store's routesGeneration when it was read. */
    generation: number | undefined;
    /** When its oldest node stops being live (unchanged, it would be listed still). */
    staleAtMs: number;
    table: Promise<MeshTable | undefined>;
    /** Set once `table` settled: read at once by the heartbeats answered meanwhile. */
    settled?: { table: MeshTable | undefined };
  };
  /**
   * The last table read, answered for as long as the store fails reads: an empty answer would
   * close every node's listeners, a store outage cutting every service reached through the mesh.
   */
  private lastGood?: MeshTable;
  private warnedDuplicates = new Set<string>();
  private warnedShared = new Set<string>();
  private warnedCrowded = new Set<string>();
  private warnedLeftOff = false;

  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * The routes `nodeId` is told, undefined for none (the answer leaves the field out, and its
   * agent closes every listener of the mesh): so an answer stays `{accepted: true}` in a fleet
   * that publishes nothing. Not a promise when the table is read already (most heartbeats).
   */
  forNode(nodeId: string): Promise<MeshRoute[] | undefined> | MeshRoute[] | undefined {
    const built = this.table;
    if (built?.settled && this.isFresh(built)) {
      return this.routesFor(built.settled.table, nodeId);
    }
    return this.current().then((table) => this.routesFor(table, nodeId));
  }

  /** Read less than a second ago, or unchanged since by the store's word (routesGeneration). */
  private isFresh(built: NonNullable<MeshRoutes['table']>): boolean {
    const now = this.clock.now();
    const age = now - built.builtAtMs;
    if (age < TABLE_MAX_AGE_MS) return true;
    return (
      age < UNCHANGED_TABLE_MAX_AGE_MS &&
      now <= built.staleAtMs &&
      built.generation !== undefined &&
      built.generation === this.nodes.routesGeneration()
    );
  }

  private routesFor(table: MeshTable | undefined, nodeId: string): MeshRoute[] | undefined {
    if (!table) return undefined;
    const { routes, left_off } = meshRoutesFor(table, nodeId);
    if (routes.length === 0) return undefined;
    if (left_off > 0 && !this.warnedLeftOff) {
      this.warnedLeftOff = true;
      this.logger.warn(
        `node ${nodeId}: the routing mesh's table has ${routes.length + left_off} routes, more than one answer carries; the ${left_off} highest ports are left out (warned once)`,
      );
    }
    return routes;
  }

  private current(): Promise<MeshTable | undefined> {
    if (this.table && this.isFresh(this.table)) return this.table.table;
    const now = this.clock.now();
    const built: NonNullable<MeshRoutes['table']> = {
      builtAtMs: now,
      generation: this.nodes.routesGeneration(),
      staleAtMs: now + NODE_STALE_AFTER_MS,
      table: Promise.resolve(undefined),
    };
    built.table = this.nodes.listLive(liveSince(now)).then(
      (nodes) => {
        try {
          for (const node of nodes) {
            built.staleAtMs = Math.min(built.staleAtMs, node.received_at_ms + NODE_STALE_AFTER_MS);
          }
          return (this.lastGood = this.noted(meshTable(nodes)));
        } catch (error) {
          this.logger.error(`the routing mesh's table not built: ${(error as Error).message}`);
          return this.unread(built);
        }
      },
      () => this.unread(built),
    );
    void built.table.then((settled) => (built.settled = { table: settled }));
    this.table = built;
    return built.table;
  }

  /** A table not read: the last one answered meanwhile, read again after the second. */
  private unread(built: NonNullable<MeshRoutes['table']>): MeshTable | undefined {
    built.generation = undefined;
    return this.lastGood;
  }

  private noted(table: MeshTable): MeshTable {
    const now = new Set<string>();
    for (const { port, holders } of table.duplicates) {
      now.add(port);
      if (this.warnedDuplicates.has(port)) continue;
      this.logger.warn(
        `host port ${port} is published by ${holders.join(' and ')}: left out of the routing mesh (no node forwards it) until one of them no longer publishes it`,
      );
    }
    this.warnedDuplicates = now;
    const shared = new Set<string>();
    for (const { wg_ip, node_ids } of table.shared_addresses) {
      shared.add(wg_ip);
      if (this.warnedShared.has(wg_ip)) continue;
      this.logger.warn(
        `mesh address ${wg_ip} is claimed by nodes ${node_ids.join(' and ')}: their routes are left out of the routing mesh until one of them no longer claims it`,
      );
    }
    this.warnedShared = shared;
    const crowded = new Set<string>();
    for (const { node_id, left_off } of table.crowded) {
      crowded.add(node_id);
      if (this.warnedCrowded.has(node_id)) continue;
      this.logger.warn(
        `node ${node_id} publishes more than ${MAX_MESH_ROUTES_PER_NODE} host ports: its ${left_off} highest are left out of the routing mesh (warned once)`,
      );
    }
    this.warnedCrowded = crowded;
    return table;
  }
}
