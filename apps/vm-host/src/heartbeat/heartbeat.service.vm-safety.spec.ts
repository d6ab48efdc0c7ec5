import { Subject } from 'rxjs';
import { FakeClock } from '../../../../test/support/fake-clock';
import { VmHostConfig } from '../config/vm-host.config';
import type { HostFacts, HostFactsService } from '../host-facts/host-facts.service';
import { QEMU_OVERHEAD_MB } from '../vms/vm-capacity';
import type { FleetClient } from './fleet.client';
import { HeartbeatService } from './heartbeat.service';
import type { NodeVmsReport, NodeVmsSource } from './node-vms.source';

const FACTS: HostFacts = {
  hostname: 'node-a.example',
  ram_total_mb: 24_576,
  // Sampled: 3000 MB of the host, plus 300 MB the two guests touched so far.
  ram_used_mb: 3_300,
  cpu_cores: 8,
  cpu_load_pct: 12.5,
  kvm_available: false,
  boot_id: 'boot-1',
};

const KEY = `${'a'.repeat(64)}.${'b'.repeat(64)}`;

const REPORT: NodeVmsReport = {
  vms: [
    {
      vm_id: 'vm-00000000000000a1',
      vm_type: 'web',
      state: 'Running',
      ram_alloc_mb: 8_192,
      vcpu_count: 2,
      started_at: '2026-08-06T11:59:00.000Z',
      tenant_id: null,
      host_ports: [],
      idempotency_key: KEY,
    },
    {
      vm_id: 'vm-00000000000000a2',
      vm_type: 'db',
      state: 'Provisioning',
      ram_alloc_mb: 4_096,
      vcpu_count: 1,
      started_at: null,
      tenant_id: null,
      host_ports: [],
    },
  ],
  committed: [
    { ramAllocMb: 8_192, vcpuCount: 2, rssMb: 300 },
    { ramAllocMb: 4_096, vcpuCount: 1, rssMb: 0 },
  ],
};

describe('HeartbeatService reports committed RAM', () => {
  it('sends ram_used_mb as the host without its guests plus every VM as given plus overhead', async () => {
    const config = Object.assign(new VmHostConfig(), {
      nodeId: 'node-a',
      wgIp: '10.8.0.21',
      spawnPort: 9204,
      reserved: false,
    });
    const hostFacts = { read: () => Promise.resolve(FACTS) } as unknown as HostFactsService;
    const vms: NodeVmsSource = {
      report: () => Promise.resolve(REPORT),
      changes: new Subject<void>().asObservable(),
    };
    const heartbeat = new HeartbeatService(
      config,
      hostFacts,
      vms,
      {} as FleetClient,
      new FakeClock(),
    );
    const body = await heartbeat.compose();
    expect(body.ram_total_mb).toBe(24_576);
    expect(body.ram_used_mb).toBe(3_000 + 8_192 + 4_096 + 2 * QEMU_OVERHEAD_MB);
    expect(body.vms).toEqual(REPORT.vms);
    expect(body.vms[0]).toHaveProperty('idempotency_key', KEY);
  });
});
