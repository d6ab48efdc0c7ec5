import { Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prometheus from 'prom-client';
import { metricTypes, sampleValue } from '../../../../test/support/prometheus-text';
import { HostMetrics } from './host-metrics.service';

describe('HostMetrics', () => {
  let states: string[];
  let metrics: HostMetrics;
  const scraped = async (): Promise<string> => (await metrics.scrape()).body;

  beforeEach(() => {
    for (const level of ['log', 'warn', 'error'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation(() => undefined);
    }
    states = [];
    metrics = new HostMetrics({
      prometheus,
      listVmStates: () => Promise.resolve(states),
      version: '1.2.3',
    });
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

  it('counts VMs paused on a full disk when scraped, and each pause found', async () => {
    let paused = 2;
    const withPauses = new HostMetrics({
      prometheus,
      listVmStates: () => Promise.resolve([]),
      countPausedOnFullDisk: () => Promise.resolve(paused),
    });
    withPauses.countDiskFullPause();
    let text = (await withPauses.scrape()).body;
    expect(sampleValue(text, 'ppn_host_vms_paused_disk_full')).toBe(2);
    expect(sampleValue(text, 'ppn_host_vm_disk_full_pauses_total')).toBe(1);
    paused = 0;
    text = (await withPauses.scrape()).body;
    expect(sampleValue(text, 'ppn_host_vms_paused_disk_full')).toBe(0);
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

  it("says which version runs, in ppn_host_build_info: the package's by default", async () => {
    expect(sampleValue(await scraped(), 'ppn_host_build_info{version="1.2.3"}')).toBe(1);
    const unnamed = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve([]) });
    const { version } = JSON.parse(
      readFileSync(join(__dirname, '../../../../package.json'), 'utf8'),
    ) as { version: string };
    const text = (await unnamed.scrape()).body;
    expect(sampleValue(text, `ppn_host_build_info{version="${version}"}`)).toBe(1);
  });

  it('names exactly its metrics in the metrics table of docs/operating.md', async () => {
    const readme = readFileSync(join(__dirname, '../../../../docs/operating.md'), 'utf8');
    const documented = [
      ...readme.matchAll(/^\| `(ppn_host_\w+)(?:\{[\w,]+\})?` \| (\w+) \|/gm),
    ].map(([, name, type]) => [name, type]);
    const declared = [...metricTypes(await scraped())].filter(([name]) =>
      name.startsWith('ppn_host_'),
    );
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(declared));
  });

  it('declares its metrics with their types, beside the default process metrics', async () => {
    const types = metricTypes(await scraped());
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('ppn_')))).toEqual({
      ppn_host_vms: 'gauge',
      ppn_host_heartbeat_failures_total: 'counter',
      ppn_host_heartbeats_ignored_total: 'counter',
      ppn_host_spawn_duration_seconds: 'histogram',
      ppn_host_ram_committed_bytes: 'gauge',
      ppn_host_ram_total_bytes: 'gauge',
      ppn_host_build_info: 'gauge',
      ppn_host_vm_restarts_total: 'counter',
      ppn_host_vm_start_failures_total: 'counter',
      ppn_host_vms_crash_looping: 'gauge',
      ppn_host_vms_paused_disk_full: 'gauge',
      ppn_host_vm_disk_full_pauses_total: 'counter',
      ppn_host_vm_copy_sent_bytes_total: 'counter',
      ppn_host_vm_copy_failures_total: 'counter',
      ppn_host_vm_copy_last_time_seconds: 'gauge',
      ppn_vm_host_fenced_vms: 'gauge',
      ppn_vm_host_moves_unconfirmed: 'gauge',
      ppn_vm_host_mesh_ports: 'gauge',
      ppn_vm_host_fences_total: 'counter',
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
