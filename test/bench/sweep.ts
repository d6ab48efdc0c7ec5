/**
 * The staleness sweep at scale, in its own process: the controller's own module with a clock
 * the bench moves, 100,000 nodes heard at the same instant, then all of them stale at once.
 * Prints the sweep's duration and the longest event-loop stall as JSON.
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { plainToInstance } from 'class-transformer';
import { performance } from 'node:perf_hooks';
import { Clock } from '@app/daemon';
import { NODE_STALE_AFTER_MS, NodeHeartbeat } from '@app/fleet-domain';
import { FleetAppModule } from '../../apps/fleet/src/fleet-app.module';
import { NodeStalenessJob } from '../../apps/fleet/src/nodes/node-staleness.job';
import { NodesRepository } from '../../apps/fleet/src/nodes/nodes.repository';
import { NodesService } from '../../apps/fleet/src/nodes/nodes.service';
import { FakeClock } from '../support/fake-clock';
import { heartbeatStream } from './heartbeat-bodies';
import { LoopStallMeter } from './loop-stall';

async function main(): Promise<void> {
  const nodes = Number(process.argv[2] ?? 100_000);
  Logger.overrideLogger(false);
  const clock = new FakeClock();
  // Compiled but not started: the bench runs the job itself, at the moment it chooses.
  const moduleRef = await Test.createTestingModule({ imports: [FleetAppModule.forConfig()] })
    .overrideProvider(Clock)
    .useValue(clock)
    .compile();
  const service = moduleRef.get(NodesService);
  const job = moduleRef.get(NodeStalenessJob);
  const next = heartbeatStream(nodes);
  for (let index = 0; index < nodes; index++) {
    await service.acceptHeartbeat(plainToInstance(NodeHeartbeat, JSON.parse(next()) as object));
  }
  const live = (await moduleRef.get(NodesRepository).listLive(0)).length;

  const stalls = new LoopStallMeter();
  await new Promise((resolve) => setTimeout(resolve, 50));
  stalls.reset();
  clock.advance(NODE_STALE_AFTER_MS + 100);
  const startedAt = performance.now();
  await job.sweep();
  const sweepMs = performance.now() - startedAt;
  await new Promise((resolve) => setTimeout(resolve, 50));
  const maxLoopStallMs = stalls.maxMs();
  stalls.stop();
  const left = (await moduleRef.get(NodesRepository).listLive(0)).length;
  process.stdout.write(JSON.stringify({ nodes: live, left, sweepMs, maxLoopStallMs }));
}

void main();
