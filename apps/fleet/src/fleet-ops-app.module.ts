import { DynamicModule, Global, INestApplicationContext, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import {
  BearerTokenGuard,
  BearerTokens,
  Clock,
  JsonErrorFilter,
  createValidationPipe,
} from '@app/daemon';
import { AuditLog } from './audit/audit-log';
import { ConsoleModule } from './console/console.module';
import { FleetConfig } from './config/fleet.config';
import { FLEET_OPS_ERROR_STATUSES } from './fleet-error.statuses';
import { KeyClaims } from './nodes/key-claims.repository';
import { NodeLeases } from './nodes/node-leases';
import { NodesRepository } from './nodes/nodes.repository';
import { VmMoves } from './nodes/vm-moves.repository';
import { NodeDrains } from './nodes/node-drains.repository';
import { NodeTokens } from './nodes/node-tokens';
import { OperationsModule } from './operations/operations.module';
import { VmMoveModule } from './moves/vm-move.module';
import { NodeDrainModule } from './drains/node-drain.module';
import { RecoveryOpsModule } from './recovery/recovery-ops.module';
import { TenantQuotas } from './tenants/tenant-quotas.service';
import { TenantVmInterceptor } from './vms/tenant-vm.interceptor';
import { VmHostClient } from './vms/vm-host.client';
import { VmHostClientSettings } from './vms/agent-calls';
import { VmPlacementService } from './vms/vm-placement.service';
import { VmsService } from './vms/vms.service';
import { FLEET_REALM } from './fleet-ops-app.holder';

/**
 * The controller's own instances the operations listener works with, taken from the main app
 * (`app.get`): one store, one agents' client and one set of tokens for both listeners, so a
 * test's overrides (its clock, its agent timeout) hold on both.
 */
export interface FleetOpsShared {
  bearerTokens: BearerTokens;
  vms: VmsService;
  vmHost: VmHostClient;
  vmHostSettings: VmHostClientSettings;
  /** For the web console: the fleet's nodes, its clock, placement and the API token. */
  nodes: NodesRepository;
  clock: Clock;
  placement: VmPlacementService;
  config: FleetConfig;
  /** The tenants' quotas and use, for the console's overview. */
  tenantQuotas: TenantQuotas;
  /** The controller's one audit log. */
  audit: AuditLog;
  /** For restores: the store's claims (one restore of a VM at a time) and its moves. */
  keyClaims: KeyClaims;
  vmMoves: VmMoves;
  /** The drained nodes (`node drain`), shared with the API's placement. */
  nodeDrains: NodeDrains;
  /** etcd mode's node leases, for `node declare-dead`. */
  nodeLeases: NodeLeases;
  /** For a restore onto a node that does not hold the copy: the holder's token signs its read grant. */
  nodeTokens: NodeTokens;
}

/** The shared instances of `fleet`, the controller's main app. */
export function fleetOpsSharedFrom(fleet: INestApplicationContext): FleetOpsShared {
  return {
    bearerTokens: fleet.get(BearerTokens),
    vms: fleet.get(VmsService),
    vmHost: fleet.get(VmHostClient),
    vmHostSettings: fleet.get(VmHostClientSettings),
    nodes: fleet.get(NodesRepository),
    clock: fleet.get(Clock),
    placement: fleet.get(VmPlacementService),
    config: fleet.get(FleetConfig),
    tenantQuotas: fleet.get(TenantQuotas),
    audit: fleet.get(AuditLog),
    keyClaims: fleet.get(KeyClaims),
    vmMoves: fleet.get(VmMoves),
    nodeDrains: fleet.get(NodeDrains),
    nodeLeases: fleet.get(NodeLeases),
    nodeTokens: fleet.get(NodeTokens),
  };
}

/** The shared instances, for every module of the ops app. */
@Global()
@Module({})
class FleetOpsCoreModule {
  static with(shared: FleetOpsShared): DynamicModule {
    return {
      module: FleetOpsCoreModule,
      providers: [
        { provide: BearerTokens, useValue: shared.bearerTokens },
        { provide: VmsService, useValue: shared.vms },
        { provide: VmHostClient, useValue: shared.vmHost },
        { provide: VmHostClientSettings, useValue: shared.vmHostSettings },
        { provide: NodesRepository, useValue: shared.nodes },
        { provide: Clock, useValue: shared.clock },
        { provide: VmPlacementService, useValue: shared.placement },
        { provide: FleetConfig, useValue: shared.config },
        { provide: TenantQuotas, useValue: shared.tenantQuotas },
        { provide: AuditLog, useValue: shared.audit },
        { provide: KeyClaims, useValue: shared.keyClaims },
        { provide: VmMoves, useValue: shared.vmMoves },
        { provide: NodeDrains, useValue: shared.nodeDrains },
        { provide: NodeLeases, useValue: shared.nodeLeases },
        { provide: NodeTokens, useValue: shared.nodeTokens },
      ],
      exports: [
        BearerTokens,
        VmsService,
        VmHostClient,
        VmHostClientSettings,
        NodesRepository,
        Clock,
        VmPlacementService,
        FleetConfig,
        TenantQuotas,
        AuditLog,
        KeyClaims,
        VmMoves,
        NodeDrains,
        NodeLeases,
        NodeTokens,
      ],
    };
  }
}

/**
 * The operations listener (VM_FLEET_OPS_ADDR): a Nest app of its own beside the API, whose
 * route table the contract fixes, with the same guard (VM_FLEET_API_TOKEN), validation and
 * error filter. Its routes are under /v1/; the web console (console/) is at `/`.
 */
@Module({})
export class FleetOpsAppModule {
  static forShared(shared: FleetOpsShared): DynamicModule {
    return {
      module: FleetOpsAppModule,
      imports: [
        FleetOpsCoreModule.with(shared),
        OperationsModule,
        RecoveryOpsModule,
        VmMoveModule,
        NodeDrainModule,
        ConsoleModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: BearerTokenGuard },
        { provide: APP_INTERCEPTOR, useClass: TenantVmInterceptor },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        {
          provide: APP_FILTER,
          useFactory: () => new JsonErrorFilter(FLEET_OPS_ERROR_STATUSES, FLEET_REALM),
        },
      ],
    };
  }
}
