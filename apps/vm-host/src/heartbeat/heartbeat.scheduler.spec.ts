import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import * as prometheus from 'prom-client';
import { Subject } from 'rxjs';
import { sampleValue } from '../../../../test/support/prometheus-text';
import { vmHostConfig } from '../../../../test/support/configs';
import { HostMetrics } from '../metrics/host-metrics.service';
import type { NodeVmsSource } from '../vms/node-vms.source';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import type { HeartbeatService } from './heartbeat.service';

/** One heartbeat the test answers by hand. */
class ManualBeats {
  /** The controller that answered, as the heartbeat service names it. */
  readonly endpointForLogs = 'http://fleet:9203';
  readonly pending: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  readonly send = jest.fn(
    () => new Promise<void>((resolve, reject) => this.pending.push({ resolve, reject })),
  );

  async answer(error?: Error): Promise<void> {
    const beat = this.pending.shift()!;
    if (error) beat.reject(error);
    else beat.resolve();
    // Let the scheduler's continuation run.
    await jest.advanceTimersByTimeAsync(0);
  }
}

describe('HeartbeatScheduler', () => {
  let beats: ManualBeats;
  let vmChanges: Subject<void>;
  let scheduler: HeartbeatScheduler;
  let logs: string[];

  beforeEach(() => {
    jest.useFakeTimers();
    beats = new ManualBeats();
    vmChanges = new Subject<void>();
    const config = vmHostConfig({
      VM_NODE_ID: 'n1',
      VM_HEARTBEAT_INTERVAL_S: '10',
      VM_FLEET_ENDPOINT: 'http://fleet:9203',
    });
    scheduler = new HeartbeatScheduler(
      config,
      beats as unknown as HeartbeatService,
      new SchedulerRegistry(),
      { changes: vmChanges.asObservable() } as unknown as NodeVmsSource,
    );
    logs = [];
    jest
      .spyOn(Logger.prototype, 'log')
      .mockImplementation((message: unknown) => void logs.push(`log ${String(message)}`));
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void logs.push(`warn ${String(message)}`));
  });

  afterEach(() => {
    scheduler.onApplicationShutdown();
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it('beats at once on start, then once per interval within +-10%', async () => {
    scheduler.start();
    expect(beats.send).toHaveBeenCalledTimes(1);
    await beats.answer();
    await jest.advanceTimersByTimeAsync(8_999);
    expect(beats.send).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(2_002);
    expect(beats.send).toHaveBeenCalledTimes(2);
  });

  it('jitters the delay between 90% and 110% of the interval', () => {
    expect(scheduler.nextDelayMs(0)).toBe(9_000);
    expect(scheduler.nextDelayMs(0.5)).toBe(10_000);
    expect(scheduler.nextDelayMs(1)).toBe(11_000);
  });

  it('never has two heartbeats in flight; a VM change during one is sent right after it', async () => {
    scheduler.start();
    vmChanges.next();
    vmChanges.next();
    scheduler.beatNow();
    expect(beats.send).toHaveBeenCalledTimes(1);
    await beats.answer();
    expect(beats.send).toHaveBeenCalledTimes(2);
    await beats.answer();
    expect(beats.send).toHaveBeenCalledTimes(2);
  });

  it('beats at once after a VM change between heartbeats', async () => {
    scheduler.start();
    await beats.answer();
    vmChanges.next();
    expect(beats.send).toHaveBeenCalledTimes(2);
  });

  it('warns once per failed beat with the reason, carries on, and logs the first success after', async () => {
    scheduler.start();
    await beats.answer(new Error('controller answered 503'));
    await jest.advanceTimersByTimeAsync(11_000);
    await beats.answer(
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      }),
    );
    await jest.advanceTimersByTimeAsync(11_000);
    await beats.answer();
    expect(logs).toEqual([
      'warn node n1: heartbeat to http://fleet:9203 failed (controller answered 503); retrying in about 10 s',
      'warn node n1: heartbeat to http://fleet:9203 failed (ECONNREFUSED: connect ECONNREFUSED); retrying in about 10 s',
      'log node n1 enrolled: heartbeating to http://fleet:9203 every 10 s (after 2 failed attempt(s))',
    ]);
  });

  it('stops beating on shutdown', async () => {
    scheduler.start();
    await beats.answer();
    scheduler.onApplicationShutdown();
    await jest.advanceTimersByTimeAsync(60_000);
    vmChanges.next();
    expect(beats.send).toHaveBeenCalledTimes(1);
  });

  it('counts every heartbeat the controller did not take, and none it took', async () => {
    const metrics = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve([]) });
    const failures = async (): Promise<number | undefined> =>
      sampleValue((await metrics.scrape()).body, 'ppn_host_heartbeat_failures_total');
    const outcomes: Array<Error | undefined> = [new Error('ECONNREFUSED'), new Error('503')];
    const heartbeat = {
      send: () => {
        const outcome = outcomes.shift();
        return outcome ? Promise.reject(outcome) : Promise.resolve();
      },
    } as unknown as HeartbeatService;
    const counting = new HeartbeatScheduler(
      vmHostConfig({
        VM_NODE_ID: 'node-a',
        VM_HEARTBEAT_INTERVAL_S: '10',
        VM_FLEET_ENDPOINT: 'http://fleet:9203',
      }),
      heartbeat,
      new SchedulerRegistry(),
      { changes: new Subject<void>() } as unknown as NodeVmsSource,
      metrics,
    );
    counting.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(await failures()).toBe(1);
    await jest.advanceTimersByTimeAsync(11_000);
    expect(await failures()).toBe(2);
    await jest.advanceTimersByTimeAsync(11_000);
    await jest.advanceTimersByTimeAsync(11_000);
    expect(await failures()).toBe(2);
    counting.onApplicationShutdown();
  });
});
