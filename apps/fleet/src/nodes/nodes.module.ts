import { Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { FleetConfig } from '../config/fleet.config';
import { LiveNodesSource } from '../metrics/live-nodes.source';
import { LiveNodesReader } from './live-nodes.reader';
import { NodeStalenessJob } from './node-staleness.job';
import { KeyClaims } from './key-claims.repository';
import { Leadership, SoleLeader } from './leadership';
import { LeadershipJob } from './leadership.job';
import { NodeLeases, NoNodeLeases } from './node-leases';
import { chooseNodesStore } from './nodes-store.choice';
import { OpenNodesStore } from './nodes-store';
import { NodesController } from './nodes.controller';
import { NodesRepository } from './nodes.repository';
import { NodesService } from './nodes.service';
import { VmMoves } from './vm-moves.repository';
import { NodeDrains } from './node-drains.repository';
import { GrantedCopies } from './granted-copies';
import { MeshRoutes } from './mesh-routes';
import { NoSharedCopyGrants, SharedCopyGrants } from './shared-copy-grants';
import { GrantedCopiesJob } from './granted-copies.job';

/** The store the configuration chose (nodes-store.choice.ts), opened once and closed with the app. */
class ChosenNodesStore implements OnModuleInit, OnApplicationShutdown {
  readonly opened: OpenNodesStore;

  constructor(config: FleetConfig) {
    this.opened = chooseNodesStore(config).open(config);
  }

  /** A store that must answer at start (etcd) fails the start, naming its variable. */
  async onModuleInit(): Promise<void> {
    await this.opened.ready?.();
  }

  onApplicationShutdown(): Promise<void> {
    return this.opened.close();
  }
}

/**
 * The node registry, the store of fleet state (nodes and Idempotency-Key claims) and its clock,
 * for every module that imports it.
 */
@Module({
  controllers: [NodesController],
  providers: [
    NodesService,
    MeshRoutes,
    NodeStalenessJob,
    {
      provide: ChosenNodesStore,
      useFactory: (config: FleetConfig) => new ChosenNodesStore(config),
      inject: [FleetConfig],
    },
    {
      provide: NodesRepository,
      useFactory: (store: ChosenNodesStore) => store.opened.repository,
      inject: [ChosenNodesStore],
    },
    {
      provide: KeyClaims,
      useFactory: (store: ChosenNodesStore) => store.opened.keyClaims,
      inject: [ChosenNodesStore],
    },
    {
      provide: VmMoves,
      useFactory: (store: ChosenNodesStore) => store.opened.vmMoves,
      inject: [ChosenNodesStore],
    },
    {
      provide: NodeDrains,
      useFactory: (store: ChosenNodesStore) => store.opened.nodeDrains,
      inject: [ChosenNodesStore],
    },
    {
      provide: Clock,
      useFactory: (store: ChosenNodesStore) => store.opened.clock,
      inject: [ChosenNodesStore],
    },
    {
      provide: NodeLeases,
      useFactory: (store: ChosenNodesStore) => store.opened.nodeLeases ?? new NoNodeLeases(),
      inject: [ChosenNodesStore],
    },
    {
      provide: Leadership,
      useFactory: (store: ChosenNodesStore) => store.opened.leadership ?? new SoleLeader(),
      inject: [ChosenNodesStore],
    },
    {
      provide: SharedCopyGrants,
      useFactory: (store: ChosenNodesStore) => store.opened.copyGrants ?? new NoSharedCopyGrants(),
      inject: [ChosenNodesStore],
    },
    LeadershipJob,
    GrantedCopies,
    GrantedCopiesJob,
    { provide: LiveNodesSource, useClass: LiveNodesReader },
  ],
  exports: [
    NodesService,
    NodesRepository,
    KeyClaims,
    VmMoves,
    NodeDrains,
    NodeLeases,
    Leadership,
    Clock,
    LiveNodesSource,
    GrantedCopies,
    SharedCopyGrants,
  ],
})
export class NodesModule {}
