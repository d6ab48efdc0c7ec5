import { Logger } from '@nestjs/common';
import * as prometheus from 'prom-client';
import { Subject } from 'rxjs';
import { HYPERVISOR_OVERHEAD_MB, rfc3339ToEpochNanos } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { vmHostConfig } from '../../../../test/support/configs';
import { heartbeat as agentHeartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { sampleValue } from '../../../../test/support/prometheus-text';
import type { HostFacts, HostFactsService } from '../host-facts/host-facts.service';
import { HostMetrics } from '../metrics/host-metrics.service';
import type { NodeVmsReport, NodeVmsSource, ReportedVm } from '../vms/node-vms.source';
import type { FleetClient, HeartbeatAnswer, HeartbeatBody } from './fleet.client';
import { HeartbeatService } from './heartbeat.service';
import type { VmFencing } from '../vms/fencing/vm-fencing.service';

const FACTS: HostFacts = {
  hostname: 'node-a.example',
  ram_total_mb: 16384,
  ram_used_mb: 4096,
  cpu_cores: 8,
  cpu_load_pct: 12.5,
  kvm_available: false,
  boot_id: 'boot-1',
};

const VM: ReportedVm = vmRecord('vm-0123456789abcdef', {
  ram_alloc_mb: 96,
  started_at: '2026-08-06T11:59:00.000Z',
});

const CONFIG = vmHostConfig({
  VM_NODE_ID: 'node-a',
  VM_WG_IP: '10.8.0.21',
  VM_SPAWN_PORT: '9204',
  VM_RESERVED: 'false',
});

/** Host facts that read as `facts` say at the time. */
function hostFactsOf(facts: HostFacts): HostFactsService {
  return { read: () => Promise.resolve({ ...facts }) } as unknown as HostFactsService;
}

/** This node's VMs, as `report` says at the time. */
function vmsOf(report: () => Promise<NodeVmsReport>, superseded: string[][] = []): NodeVmsSource {
  return {
    report: () => report(),
    supersede: (vmIds: readonly string[]) => {
      superseded.push([...vmIds]);
      return Promise.resolve();
    },
    changes: new Subject<void>().asObservable(),
  };
}

describe('HeartbeatService', () => {
  let clock: FakeClock;
  let sent: Array<{ body: HeartbeatBody; signal: AbortSignal }>;
  let heartbeat: HeartbeatService;
  let report: NodeVmsSource['report'];

  beforeEach(() => {
    clock = new FakeClock();
    sent = [];
    report = () => Promise.resolve({ vms: [VM], committed: [] });
    const fleet = {
      sendHeartbeat: (body: HeartbeatBody, signal: AbortSignal) => {
        sent.push({ body, signal });
        return Promise.resolve({ accepted: true });
      },
    } as unknown as FleetClient;
    heartbeat = new HeartbeatService(
      CONFIG,
      hostFactsOf(FACTS),
      vmsOf(() => report()),
      fleet,
      clock,
    );
  });

  it("sends the node, its facts and every VM, stamped with the clock's time to the nanosecond", async () => {
    await heartbeat.send(5_000);
    expect(sent).toEqual([
      {
        body: agentHeartbeat({
          node_id: 'node-a',
          wg_ip: '10.8.0.21',
          spawn_port: 9204,
          reserved: false,
          ...FACTS,
          vms: [VM],
          timestamp_utc: '2026-08-06T12:00:00.000000000Z',
        }),
        signal: expect.any(AbortSignal) as AbortSignal,
      },
    ]);
  });

  it('lists the fenced VMs and hands each answer to fencing with the time the heartbeat was sent', async () => {
    const answered: Array<{ sentAtMs: number; answer: HeartbeatAnswer }> = [];
    const fencing = {
      now: () => clock.now(),
      fencedVmIds: () => ['vm-00000000000000a1'],
      answered: (sentAtMs: number, answer: HeartbeatAnswer) => {
        answered.push({ sentAtMs, answer });
        return Promise.resolve();
      },
    } as unknown as VmFencing;
    const bodies: HeartbeatBody[] = [];
    const sendAtMs = clock.now();
    const fleet = {
      sendHeartbeat: (body: HeartbeatBody) => {
        bodies.push(body);
        // The answer takes 2 s: the lease still runs from the send.
        clock.advance(2_000);
        return Promise.resolve({ accepted: true, fence_after_s: 45 });
      },
    } as unknown as FleetClient;
    const beat = new HeartbeatService(
      CONFIG,
      hostFactsOf(FACTS),
      vmsOf(() => report()),
      fleet,
      clock,
      undefined,
      undefined,
      fencing,
    );
    await beat.send(5_000);
    expect(bodies[0].fenced_vm_ids).toEqual(['vm-00000000000000a1']);
    expect(answered).toEqual([
      { sentAtMs: sendAtMs, answer: { accepted: true, fence_after_s: 45 } },
    ]);
  });

  it("hands the answer's superseded VMs to the node's VMs, to be set aside", async () => {
    const superseded: string[][] = [];
    const fleet = {
      sendHeartbeat: () =>
        Promise.resolve({ accepted: true, superseded_vm_ids: ['vm-00000000000000a1'] }),
    } as unknown as FleetClient;
    const beat = new HeartbeatService(
      CONFIG,
      hostFactsOf(FACTS),
      vmsOf(() => report(), superseded),
      fleet,
      clock,
    );
    await beat.send(5_000);
    expect(superseded).toEqual([['vm-00000000000000a1']]);
    await heartbeat.send(5_000);
    expect(superseded).toHaveLength(1);
  });

  it('carries the disk room when the VMs report one, and leaves the field out when they do not', async () => {
    const diskRoom = {
      room_mb: 40_960,
      committed_mb: 28_672,
      committable_mb: 12_288,
      reserve_mb: 2_048,
      overcommit: 1,
    };
    report = () => Promise.resolve({ vms: [VM], committed: [], diskRoom });
    expect((await heartbeat.compose()).disk_room).toEqual(diskRoom);
    report = () => Promise.resolve({ vms: [VM], committed: [] });
    expect(await heartbeat.compose()).not.toHaveProperty('disk_room');
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

  it('shows the RAM the last heartbeat reported in its metrics: committed (ram_used_mb) and total', async () => {
    const metrics = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve([]) });
    const facts = { ...FACTS };
    const measured = new HeartbeatService(
      CONFIG,
      { read: () => Promise.resolve({ ...facts }) } as unknown as HostFactsService,
      vmsOf(() => Promise.resolve({ vms: [], committed: [] })),
      { sendHeartbeat: () => Promise.resolve({ accepted: true }) } as unknown as FleetClient,
      new FakeClock(),
      metrics,
    );
    const scraped = async (sample: string): Promise<number | undefined> =>
      sampleValue((await metrics.scrape()).body, sample);

    await measured.send(2_000);
    expect(await scraped('ppn_host_ram_committed_bytes')).toBe(4096 * 1024 * 1024);
    expect(await scraped('ppn_host_ram_total_bytes')).toBe(16384 * 1024 * 1024);
    facts.ram_used_mb = 6144;
    await measured.send(2_000);
    expect(await scraped('ppn_host_ram_committed_bytes')).toBe(6144 * 1024 * 1024);
  });

  describe('reports committed RAM', () => {
    const KEY = `${'a'.repeat(64)}.${'b'.repeat(64)}`;

    const REPORT: NodeVmsReport = {
      vms: [
        {
          ...vmRecord('vm-00000000000000a1', {
            ram_alloc_mb: 8_192,
            vcpu_count: 2,
            started_at: '2026-08-06T11:59:00.000Z',
          }),
          idempotency_key: KEY,
        },
        vmRecord('vm-00000000000000a2', {
          vm_type: 'db',
          state: 'Provisioning' as ReportedVm['state'],
          ram_alloc_mb: 4_096,
          started_at: null,
        }),
      ],
      committed: [
        { ramAllocMb: 8_192, vcpuCount: 2, rssMb: 300 },
        { ramAllocMb: 4_096, vcpuCount: 1, rssMb: 0 },
      ],
    };

    it('sends ram_used_mb as the host without its guests plus every VM as given plus overhead', async () => {
      const facts: HostFacts = {
        ...FACTS,
        ram_total_mb: 24_576,
        // Sampled: 3000 MB of the host, plus 300 MB the two guests touched so far.
        ram_used_mb: 3_300,
      };
      const committing = new HeartbeatService(
        CONFIG,
        hostFactsOf(facts),
        vmsOf(() => Promise.resolve(REPORT)),
        {} as FleetClient,
        new FakeClock(),
      );
      const body = await committing.compose();
      expect(body.ram_total_mb).toBe(24_576);
      expect(body.ram_used_mb).toBe(3_000 + 8_192 + 4_096 + 2 * HYPERVISOR_OVERHEAD_MB);
      expect(body.vms).toEqual(REPORT.vms);
      expect(body.vms[0]).toHaveProperty('idempotency_key', KEY);
    });
  });

  describe('a controller that ignores its heartbeats', () => {
    /**
     * A controller that, like the real one, ignores a heartbeat stamped before the one it holds
     * for the boot (as a late copy, when it arrives right after it).
     */
    function ignoringController(): { fleet: FleetClient; stamps: string[] } {
      const stamps: string[] = [];
      let stored: string | undefined;
      const fleet = {
        sendHeartbeat: (body: HeartbeatBody): Promise<HeartbeatAnswer> => {
          stamps.push(body.timestamp_utc);
          if (stored && rfc3339ToEpochNanos(body.timestamp_utc)! < rfc3339ToEpochNanos(stored)!) {
            return Promise.resolve({ accepted: false, stored_timestamp_utc: stored });
          }
          stored = body.timestamp_utc;
          return Promise.resolve({ accepted: true });
        },
      } as unknown as FleetClient;
      return { fleet, stamps };
    }

    it('hears it after a restart with the clock 10 min back: one warning, one count, and the same heartbeat again stamped after the stored one', async () => {
      const logs: string[] = [];
      jest
        .spyOn(Logger.prototype, 'log')
        .mockImplementation((message: unknown) => void logs.push(`log ${String(message)}`));
      jest
        .spyOn(Logger.prototype, 'warn')
        .mockImplementation((message: unknown) => void logs.push(`warn ${String(message)}`));
      const metrics = new HostMetrics({ prometheus, listVmStates: () => Promise.resolve([]) });
      const { fleet, stamps } = ignoringController();
      const agent = () =>
        new HeartbeatService(CONFIG, hostFactsOf(FACTS), vmsOf(report), fleet, clock, metrics);

      await agent().send(5_000);
      clock.stepWall(-600_000); // the clock goes back 10 min, then the agent restarts
      const restarted = agent();
      await restarted.send(5_000);
      clock.advance(10_000);
      await restarted.send(5_000);

      expect(stamps).toEqual([
        '2026-08-06T12:00:00.000000000Z',
        '2026-08-06T11:50:00.000000000Z', // ignored
        '2026-08-06T12:00:00.000000001Z', // sent again at once, and taken
        '2026-08-06T12:00:00.000000002Z',
      ]);
      expect(logs).toEqual([
        "warn node node-a: the controller answered 200 but ignored the heartbeat stamped 2026-08-06T11:50:00.000000000Z: it holds one of this boot (boot-1) stamped later, 2026-08-06T12:00:00.000000000Z. This machine's clock went back, or another agent sends as this node; stamping after it from now on (warned once until heartbeats are taken again)",
        'log node node-a: the controller takes heartbeats again (after 1 ignored)',
      ]);
      expect(sampleValue((await metrics.scrape()).body, 'ppn_host_heartbeats_ignored_total')).toBe(
        1,
      );
      jest.restoreAllMocks();
    });

    it('warns once however many it ignores, and does not follow a stamp from another century', async () => {
      const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const far = '2126-08-06T12:00:00Z';
      const sentStamps: string[] = [];
      const fleet = {
        sendHeartbeat: (body: HeartbeatBody): Promise<HeartbeatAnswer> => {
          sentStamps.push(body.timestamp_utc);
          return Promise.resolve({ accepted: false, stored_timestamp_utc: far });
        },
      } as unknown as FleetClient;
      const agent = new HeartbeatService(CONFIG, hostFactsOf(FACTS), vmsOf(report), fleet, clock);
      for (let beat = 0; beat < 3; beat++) {
        await agent.send(5_000);
        clock.advance(10_000);
      }
      expect(sentStamps).toEqual([
        '2026-08-06T12:00:00.000000000Z',
        '2026-08-06T12:00:10.000000000Z',
        '2026-08-06T12:00:20.000000000Z',
      ]);
      expect(warnings).toHaveBeenCalledTimes(1);
      jest.restoreAllMocks();
    });
  });
});
