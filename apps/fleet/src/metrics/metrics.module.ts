import { DynamicModule, Global, Module, Provider } from '@nestjs/common';
import { Clock, MetricsEndpoint } from '@app/daemon';
import { liveSince } from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';
import { NodesModule } from '../nodes/nodes.module';
import { NodesRepository } from '../nodes/nodes.repository';
import { FleetMetrics } from './fleet-metrics.service';
import { RefusedHeartbeatsCounter } from './refused-heartbeats.counter';

/**
 * FleetMetrics for every module. With VM_FLEET_METRICS_ADDR set, prom-client is loaded and
 * GET /metrics served on that address alone; unset, nothing is loaded, bound or counted.
 */
@Global()
@Module({})
export class MetricsModule {
  static forConfig(config: FleetConfig): DynamicModule {
    const address = config.metricsAddress;
    const providers: Provider[] = address
      ? [
          {
            provide: FleetMetrics,
            useFactory: async (nodes: NodesRepository, clock: Clock) =>
              new FleetMetrics({
                prometheus: await import('prom-client'),
                countLiveNodes: async () =>
                  (await nodes.listLiveRecords(liveSince(clock.now()))).length,
              }),
            inject: [NodesRepository, Clock],
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
      imports: address ? [NodesModule] : [],
      providers,
      exports: [FleetMetrics],
    };
  }
}
