import { Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as prometheus from 'prom-client';
import { Subject, firstValueFrom } from 'rxjs';
import { FakeClock } from '../../../../test/support/fake-clock';
import { metricTypes, sampleValue } from '../../../../test/support/prometheus-text';
import { VmHostConfig } from '../config/vm-host.config';
import type { HostFactsService } from '../host-facts/host-facts.service';
import type { FleetClient } from '../heartbeat/fleet.client';
import { HeartbeatScheduler } from '../heartbeat/heartbeat.scheduler';
import { HeartbeatService } from '../heartbeat/heartbeat.service';
import type { NodeVmsSource } from '../heartbeat/node-vms.source';
import { FakeVmDriver, fakeHostFacts } from '../../../../test/support/fake-vm-driver';
import { CrashFailpoint } from '../vms/crash-failpoint';
import { VmFiles } from '../vms/vm-files';
import { VmsService } from '../vms/vms.service';
import { HostMetrics } from './host-metrics.service';

const CONFIG = Object.assign(new VmHostConfig(), {
  nodeId: 'node-a',
  wgIp: '10.8.0.21',
  spawnPort: 9204,
  reserved: false,
  heartbeatIntervalS: 10,
  fleetEndpointForLogs: 'http://fleet:9203',
});

describe('HostMetrics', () => {
  let states: string[];
  let metrics: HostMetrics;
  const scraped = async (): Promise<string> => (await metrics.scrape()).body;

  beforeEach(() => {
    for (const level of ['log', 'warn', 'error'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation(() => undefined);
    }
    states = [];
    metrics = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve(states) });
  });

  afterEach(() => {
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  it("counts this node's VMs by state as they are when scraped, every state listed", async () => {
    states = ['Running', 'Running', 'Error'];
    let text = await scraped();
    expect(sampleValue(text, 'ppn_host_vms{state="Running"}')).toBe(2);
    expect(sampleValue(text, 'ppn_host_vms{state="Error"}')).toBe(1);
    expect(sampleValue(text, 'ppn_host_vms{state="Provisioning"}')).toBe(0);
    expect(sampleValue(text, 'ppn_host_vms{state="Stopped"}')).toBe(0);
    states = ['Stopped'];
    text = await scraped();
    expect(sampleValue(text, 'ppn_host_vms{state="Running"}')).toBe(0);
    expect(sampleValue(text, 'ppn_host_vms{state="Stopped"}')).toBe(1);
  });

  it('says NaN for the VM states it cannot read, and still scrapes', async () => {
    const unreadable = new HostMetrics({
      prometheus,
      listVmStates: () => Promise.reject(new Error('EACCES')),
    });
    const text = (await unreadable.scrape()).body;
    expect(sampleValue(text, 'ppn_host_vms{state="Running"}')).toBeNaN();
    expect(sampleValue(text, 'ppn_host_heartbeat_failures_total')).toBe(0);
  });

  it('counts every heartbeat the controller did not take, and none it took', async () => {
    jest.useFakeTimers();
    const outcomes: Array<Error | undefined> = [new Error('ECONNREFUSED'), new Error('503')];
    const heartbeat = {
      send: () => {
        const outcome = outcomes.shift();
        return outcome ? Promise.reject(outcome) : Promise.resolve();
      },
    } as unknown as HeartbeatService;
    const vms = { changes: new Subject<void>() } as unknown as NodeVmsSource;
    const scheduler = new HeartbeatScheduler(
      CONFIG,
      heartbeat,
      new SchedulerRegistry(),
      vms,
      metrics,
    );
    scheduler.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(sampleValue(await scraped(), 'ppn_host_heartbeat_failures_total')).toBe(1);
    await jest.advanceTimersByTimeAsync(11_000);
    expect(sampleValue(await scraped(), 'ppn_host_heartbeat_failures_total')).toBe(2);
    await jest.advanceTimersByTimeAsync(11_000);
    await jest.advanceTimersByTimeAsync(11_000);
    expect(sampleValue(await scraped(), 'ppn_host_heartbeat_failures_total')).toBe(2);
    scheduler.onApplicationShutdown();
  });

  it('reports the RAM the last heartbeat reported: committed (ram_used_mb) and total', async () => {
    const facts = { ram_total_mb: 16384, ram_used_mb: 4096 };
    const hostFacts = {
      read: () =>
        Promise.resolve({
          hostname: 'node-a.example',
          cpu_cores: 8,
          cpu_load_pct: 1,
          kvm_available: false,
          boot_id: 'boot-1',
          ...facts,
        }),
    } as unknown as HostFactsService;
    const vms = {
      report: () => Promise.resolve({ vms: [], committed: [] }),
    } as unknown as NodeVmsSource;
    const fleet = { sendHeartbeat: () => Promise.resolve() } as unknown as FleetClient;
    const heartbeat = new HeartbeatService(CONFIG, hostFacts, vms, fleet, new FakeClock(), metrics);

    await heartbeat.send(2_000);
    let text = await scraped();
    expect(sampleValue(text, 'ppn_host_ram_committed_bytes')).toBe(4096 * 1024 * 1024);
    expect(sampleValue(text, 'ppn_host_ram_total_bytes')).toBe(16384 * 1024 * 1024);
    facts.ram_used_mb = 6144;
    await heartbeat.send(2_000);
    text = await scraped();
    expect(sampleValue(text, 'ppn_host_ram_committed_bytes')).toBe(6144 * 1024 * 1024);
  });

  it('times each VM start from accepted to started, and to failed', async () => {
    const root = await mkdtemp(join(tmpdir(), 'host-metrics-'));
    try {
      const files = new VmFiles(Object.assign(new VmHostConfig(), { diskDir: root }));
      await files.prepare();
      const driver = new FakeVmDriver();
      const config = Object.assign(new VmHostConfig(), { nodeId: 'node-a', vcpuOvercommit: 4 });
      const vms = new VmsService(
        files,
        driver,
        new FakeClock(),
        fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 }),
        config,
        new CrashFailpoint(config),
        metrics,
      );
      const request = { vm_type: 'web', ram_mb: 96, vcpu_count: 1, prefer_kvm: false };

      for (const outcome of [
        { record: { kind: 'fake' }, hostPorts: [], summary: 'fake pid 1' },
        new Error('qemu exited'),
      ]) {
        await vms.spawn(request);
        const provisioned = firstValueFrom(vms.changes);
        driver.creates.shift()!.settle(outcome);
        await provisioned;
      }

      const text = await scraped();
      expect(sampleValue(text, 'ppn_host_spawn_duration_seconds_count{outcome="started"}')).toBe(1);
      expect(sampleValue(text, 'ppn_host_spawn_duration_seconds_count{outcome="failed"}')).toBe(1);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('declares its metrics with their types, beside the default process metrics', async () => {
    const types = metricTypes(await scraped());
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('ppn_')))).toEqual({
      ppn_host_vms: 'gauge',
      ppn_host_heartbeat_failures_total: 'counter',
      ppn_host_spawn_duration_seconds: 'histogram',
      ppn_host_ram_committed_bytes: 'gauge',
      ppn_host_ram_total_bytes: 'gauge',
    });
    expect(types.get('process_resident_memory_bytes')).toBe('gauge');
  });

  it('counts nothing and has nothing to scrape when metrics are off', async () => {
    const off = new HostMetrics();
    off.countHeartbeatFailure();
    off.observeRam({ ram_used_mb: 1, ram_total_mb: 2 });
    await expect(off.timeSpawn(Promise.resolve(3))).resolves.toBe(3);
    expect(off.enabled).toBe(false);
    await expect(off.scrape()).rejects.toThrow('VM_METRICS_ADDR');
  });
});
