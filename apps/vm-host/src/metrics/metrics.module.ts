import { DynamicModule, Global, Module, Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { MetricsEndpoint } from '@app/daemon';
import { VmHostConfig } from '../config/vm-host.config';
import { HostMetrics } from './host-metrics.service';
import { VmStatesSource } from './vm-states.source';

/**
 * HostMetrics for every module. With VM_METRICS_ADDR set, prom-client is loaded and GET
 * /metrics served on that address alone; unset, nothing is loaded, bound or counted.
 */
@Global()
@Module({})
export class MetricsModule {
  static forConfig(config: VmHostConfig): DynamicModule {
    const address = config.metricsAddress;
    const providers: Provider[] = address
      ? [
          {
            provide: HostMetrics,
            // The VMs count spawns through HostMetrics: their states are found when scraped, not injected.
            useFactory: async (moduleRef: ModuleRef) =>
              new HostMetrics({
                prometheus: await import('prom-client'),
                listVmStates: async () => moduleRef.get(VmStatesSource, { strict: false }).states(),
                countCrashLooping: async () =>
                  moduleRef.get(VmStatesSource, { strict: false }).crashLooping(),
                countPausedOnFullDisk: async () =>
                  moduleRef.get(VmStatesSource, { strict: false }).pausedOnFullDisk(),
              }),
            inject: [ModuleRef],
          },
          {
            provide: MetricsEndpoint,
            useFactory: (metrics: HostMetrics) =>
              new MetricsEndpoint(address, 'VM_METRICS_ADDR', () => metrics.scrape()),
            inject: [HostMetrics],
          },
        ]
      : [{ provide: HostMetrics, useValue: new HostMetrics() }];
    return { module: MetricsModule, providers, exports: [HostMetrics] };
  }
}
