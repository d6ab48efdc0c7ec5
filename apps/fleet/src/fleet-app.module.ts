import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import {
  BearerTokenGuard,
  BearerTokens,
  JsonErrorFilter,
  TenantTokens,
  createValidationPipe,
} from '@app/daemon';
import { AuditLog } from './audit/audit-log';
import { FleetConfig } from './config/fleet.config';
import { FLEET_ERROR_STATUSES } from './fleet-error.statuses';
import { FLEET_REALM, FleetOpsAppHolder } from './fleet-ops-app.holder';
import { FleetModule } from './fleet/fleet.module';
import { MetricsModule } from './metrics/metrics.module';
import { NodeTokens } from './nodes/node-tokens';
import { NodesModule } from './nodes/nodes.module';
import { TenantVmGuard } from './vms/tenant-vm.guard';
import { CopiesModule } from './copies/copies.module';
import { RecoveryModule } from './recovery/recovery.module';
import { VmsModule } from './vms/vms.module';

/**
 * The guard's tokens: the API token, and the shared node token when there is no node secret
 * (with one, the heartbeat route checks the node's own once it knows the node); with the tenant
 * secret, each tenant's of the quotas file, taken on the routes marked TenantScoped.
 */
export function fleetBearerTokens(config: FleetConfig): BearerTokens {
  const tenants =
    config.tenantSecret === undefined
      ? undefined
      : new TenantTokens(config.tenantSecret, [...(config.tenantQuotas?.keys() ?? [])]);
  return config.nodeSecret
    ? new BearerTokens(FLEET_REALM, { api: config.apiToken }, [], ['node'], tenants)
    : new BearerTokens(
        FLEET_REALM,
        { node: config.nodeToken, api: config.apiToken },
        [],
        [],
        tenants,
      );
}

/**
 * The configuration and the tokens, for every module. The store of fleet state and its clock
 * come from NodesModule, which opens the store the configuration chose.
 */
@Global()
@Module({})
class FleetCoreModule {
  static forConfig(config: FleetConfig): DynamicModule {
    return {
      module: FleetCoreModule,
      providers: [
        { provide: FleetConfig, useValue: config },
        {
          // The guard checks the API token, and the shared node token when there is no node
          // secret; with one, the heartbeat route checks the node's own once it knows the node.
          provide: BearerTokens,
          useValue: fleetBearerTokens(config),
        },
        // What heartbeats are judged by and what the controller sends each agent.
        { provide: NodeTokens, useValue: NodeTokens.fromConfig(config) },
        // The operations listener's app, once made: closed with this one.
        FleetOpsAppHolder,
        // One audit log for both listeners (its file opened once).
        { provide: AuditLog, useFactory: () => new AuditLog(config.auditLog) },
      ],
      exports: [FleetConfig, BearerTokens, NodeTokens, FleetOpsAppHolder, AuditLog],
    };
  }
}

@Module({})
export class FleetAppModule {
  /** The whole controller; with no Redis URL, state lives in memory as the contract says. */
  static forConfig(config: FleetConfig = new FleetConfig()): DynamicModule {
    return {
      module: FleetAppModule,
      imports: [
        ScheduleModule.forRoot(),
        FleetCoreModule.forConfig(config),
        MetricsModule.forConfig(config, NodesModule),
        NodesModule,
        FleetModule,
        VmsModule,
        CopiesModule,
        RecoveryModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: BearerTokenGuard },
        // After the bearer guard (global guards run in this order), before the route: a tenant
        // reaches its own VMs only.
        { provide: APP_GUARD, useClass: TenantVmGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        {
          provide: APP_FILTER,
          useFactory: () => new JsonErrorFilter(FLEET_ERROR_STATUSES, FLEET_REALM),
        },
      ],
    };
  }
}
