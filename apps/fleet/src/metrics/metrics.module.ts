import { DynamicModule, Global, Module, Provider, Type } from '@nestjs/common';
import { MetricsEndpoint } from '@app/daemon';
import { FleetConfig } from '../config/fleet.config';
import { FleetMetrics } from './fleet-metrics.service';
import { LiveNodesSource } from './live-nodes.source';
import { RefusedHeartbeatsCounter } from './refused-heartbeats.counter';

/**
 * FleetMetrics for every module. With VM_FLEET_METRICS_ADDR set, prom-client is loaded and
 * GET /metrics served on that address alone; unset, nothing is loaded, bound or counted.
 */
@Global()
@Module({})
export class MetricsModule {
  /** `liveNodes`: the module that exports a LiveNodesSource (the app module names it). */
  static forConfig(config: FleetConfig, liveNodes: Type<unknown>): DynamicModule {
    const address = config.metricsAddress;
    const providers: Provider[] = address
      ? [
          {
            provide: FleetMetrics,
            useFactory: async (live: LiveNodesSource) =>
              new FleetMetrics({
                prometheus: await import('prom-client'),
                readNodes: () => live.read(),
              }),
            inject: [LiveNodesSource],
          },
          {
            provide: MetricsEndpoint,
            useFactory: (metrics: FleetMetrics) =>
              new MetricsEndpoint(address, 'VM_FLEET_METRICS_ADDR', () => metrics.scrape()),
            inject: [FleetMetrics],
          },
          RefusedHeartbeatsCounter,
        ]
      : [{ provide: FleetMetrics, useValue: new FleetMetrics() }];
    return {
      module: MetricsModule,
      imports: address ? [liveNodes] : [],
      providers,
      exports: [FleetMetrics],
    };
  }
}
