import { Subject } from 'rxjs';
import { FakeClock } from '../../../../test/support/fake-clock';
import { VmHostConfig } from '../config/vm-host.config';
import type { HostFacts, HostFactsService } from '../host-facts/host-facts.service';
import type { FleetClient, HeartbeatBody } from './fleet.client';
import { HeartbeatService } from './heartbeat.service';
import type { NodeVmsSource, ReportedVm } from './node-vms.source';

const FACTS: HostFacts = {
  hostname: 'node-a.example',
  ram_total_mb: 16384,
  ram_used_mb: 4096,
  cpu_cores: 8,
  cpu_load_pct: 12.5,
  kvm_available: false,
  boot_id: 'boot-1',
};

const VM: ReportedVm = {
  vm_id: 'vm-0123456789abcdef',
  vm_type: 'web',
  state: 'Running',
  ram_alloc_mb: 96,
  vcpu_count: 1,
  started_at: '2026-08-06T11:59:00.000Z',
  tenant_id: null,
  host_ports: [],
};

describe('HeartbeatService', () => {
  let clock: FakeClock;
  let sent: Array<{ body: HeartbeatBody; signal: AbortSignal }>;
  let heartbeat: HeartbeatService;
  let report: NodeVmsSource['report'];

  beforeEach(() => {
    clock = new FakeClock();
    sent = [];
    report = () => Promise.resolve({ vms: [VM], committed: [] });
    const config = Object.assign(new VmHostConfig(), {
      nodeId: 'node-a',
      wgIp: '10.8.0.21',
      spawnPort: 9204,
      reserved: false,
    });
    const hostFacts = { read: () => Promise.resolve(FACTS) } as unknown as HostFactsService;
    const vms: NodeVmsSource = {
      report: () => report(),
      changes: new Subject<void>().asObservable(),
    };
    const fleet = {
      sendHeartbeat: (body: HeartbeatBody, signal: AbortSignal) => {
        sent.push({ body, signal });
        return Promise.resolve();
      },
    } as unknown as FleetClient;
    heartbeat = new HeartbeatService(config, hostFacts, vms, fleet, clock);
  });

  it("sends the node, its facts and every VM, stamped with the clock's time to the nanosecond", async () => {
    await heartbeat.send(5_000);
    expect(sent).toEqual([
      {
        body: {
          node_id: 'node-a',
          wg_ip: '10.8.0.21',
          spawn_port: 9204,
          reserved: false,
          ...FACTS,
          vms: [VM],
          timestamp_utc: '2026-08-06T12:00:00.000000000Z',
        },
        signal: expect.any(AbortSignal) as AbortSignal,
      },
    ]);
  });

  it('starts the request timeout only once the heartbeat is composed, and stops on shutdown', async () => {
    let reported!: () => void;
    report = () =>
      new Promise((resolve) => (reported = () => resolve({ vms: [VM], committed: [] })));
    const timeouts = jest.spyOn(AbortSignal, 'timeout');
    const shutdown = new AbortController();
    const sending = heartbeat.send(5_000, shutdown.signal);
    await new Promise(setImmediate);
    expect(timeouts).not.toHaveBeenCalled();
    reported();
    await sending;
    expect(timeouts).toHaveBeenCalledWith(5_000);
    expect(sent[0].signal.aborted).toBe(false);
    shutdown.abort();
    expect(sent[0].signal.aborted).toBe(true);
    timeouts.mockRestore();
  });

  it('never stamps a beat at or before the previous one, even when the clock stands still or is set back', async () => {
    const stamps: string[] = [];
    const beat = async (): Promise<void> => {
      stamps.push((await heartbeat.compose()).timestamp_utc);
    };
    await beat();
    clock.advance(1_234);
    await beat();
    await beat();
    clock.advance(-60_000);
    await beat();
    clock.advance(120_000);
    await beat();
    expect(stamps).toEqual([
      '2026-08-06T12:00:00.000000000Z',
      '2026-08-06T12:00:01.234000000Z',
      '2026-08-06T12:00:01.234000001Z',
      '2026-08-06T12:00:01.234000002Z',
      '2026-08-06T12:01:01.234000000Z',
    ]);
  });
});
