import { heartbeat, vmRecord } from '../../../test/support/heartbeats';
import { NodeChange, NodeState, liveSince } from './node-state';
import { holdRam, recordDispatchedVm } from './node-changes';
import { nodeStateFromHeartbeat } from './node-heartbeats';
import {
  describeQuotaExcesses,
  parseTenantQuotas,
  quotaExcesses,
  tenantUse,
} from './tenant-quotas';

const NOW = 1_000_000;

function after<T>(state: NodeState, change: NodeChange<T>): NodeState {
  return change(state).next!;
}

describe('parseTenantQuotas', () => {
  it('takes every tenant with its limits, a key left out meaning no limit', () => {
    const { quotas, problems } = parseTenantQuotas({
      acme: { vms: 5, ram_mb: 8192, vcpus: 8, disk_gb: 100 },
      globex: {},
      'initech.eu': { vms: 0 },
    });
    expect(problems).toEqual([]);
    expect([...quotas]).toEqual([
      ['acme', { vms: 5, ram_mb: 8192, vcpus: 8, disk_gb: 100 }],
      ['globex', {}],
      ['initech.eu', { vms: 0 }],
    ]);
  });

  it('names every bad entry, each on its own', () => {
    const { problems } = parseTenantQuotas({
      acme: { vms: '5', ram_mb: 2 ** 53, vcpus: -1 },
      '-x': {},
      globex: [],
      initech: { cpu: 1 },
      ['a'.repeat(129)]: {},
    });
    expect(problems).toEqual([
      'tenant "acme": vms must be a whole number from 0 to 1000000000',
      'tenant "acme": ram_mb must be a whole number from 0 to 1000000000',
      'tenant "acme": vcpus must be a whole number from 0 to 1000000000',
      'tenant "-x": a tenant id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
      'tenant "globex": its quota must be an object such as {"vms": 5} ({} for none)',
      'tenant "initech": "cpu" is not a quota (vms, ram_mb, vcpus, disk_gb)',
      `tenant "${'a'.repeat(129)}": a tenant id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit`,
    ]);
    expect(parseTenantQuotas([]).problems).toEqual([
      'the file must hold one JSON object of tenant id to quota, such as {"acme": {"vms": 5}}',
    ]);
    expect(parseTenantQuotas(null).problems).toHaveLength(1);
  });

  it('names a hostile tenant id as JSON, so it cannot break the line', () => {
    const { problems } = parseTenantQuotas({ 'evil\n\u001b[2J': {} });
    expect(problems[0]).toContain('"evil\\n\\u001b[2J"');
  });
});

describe('tenantUse', () => {
  const node = (node_id: string, vms: ReturnType<typeof vmRecord>[], receivedAtMs = NOW) =>
    nodeStateFromHeartbeat(heartbeat({ node_id, ram_total_mb: 65536, vms }), receivedAtMs);
  const use = (nodes: NodeState[], tenant = 'acme') =>
    tenantUse(nodes, tenant, NOW, liveSince(NOW));

  it("sums the VMs the nodes list for the tenant, a silent node's included", () => {
    const nodes = [
      node('n1', [
        vmRecord('vm-1', { tenant_id: 'acme', ram_alloc_mb: 1024, vcpu_count: 2 }),
        vmRecord('vm-2', { tenant_id: 'globex', ram_alloc_mb: 4096 }),
        { ...vmRecord('vm-3', { tenant_id: 'acme', ram_alloc_mb: 512 }), disk_gb: 20 } as never,
      ]),
      // Silent for a minute: its VM may still run, so it still counts.
      node('n2', [vmRecord('vm-4', { tenant_id: 'acme', ram_alloc_mb: 2048 })], NOW - 60_000),
    ];
    expect(use(nodes)).toEqual({ vms: 3, ram_mb: 3584, vcpus: 4, disk_gb: 20 });
    expect(use(nodes, 'globex')).toEqual({ vms: 1, ram_mb: 4096, vcpus: 1, disk_gb: 0 });
    expect(use(nodes, 'initech')).toEqual({ vms: 0, ram_mb: 0, vcpus: 0, disk_gb: 0 });
  });

  it('counts a create in flight by its hold until its VM is listed, and once only after', () => {
    const held = after(
      node('n1', []),
      holdRam(
        {
          holdId: 'h1',
          ramMb: 2048,
          requiredFreeMb: 2560,
          nowMs: NOW,
          expiresAtMs: NOW + 20_000,
          spawnKey: 'k',
          vmId: 'vm-9',
          tenant: { tenant_id: 'acme', vcpu_count: 2, disk_gb: 10 },
        },
        liveSince(NOW),
      ),
    );
    expect(use([held])).toEqual({ vms: 1, ram_mb: 2048, vcpus: 2, disk_gb: 10 });
    // The agent accepted it: listed, and still held until a heartbeat lists it. Counted once.
    const dispatched = after(
      held,
      recordDispatchedVm('h1', {
        ...vmRecord('vm-9', { tenant_id: 'acme', ram_alloc_mb: 2048, vcpu_count: 2 }),
        disk_gb: 10,
      }),
    );
    expect(use([dispatched])).toEqual({ vms: 1, ram_mb: 2048, vcpus: 2, disk_gb: 10 });
    // A hold past its deadline no longer counts (its dispatch is over).
    expect(tenantUse([held], 'acme', NOW + 20_000, liveSince(NOW + 20_000)).vms).toBe(0);
  });
});

describe('copies against a disk_gb quota', () => {
  it("counts a VM's disk once for itself and once per copy, listed, held or asked for", () => {
    const listed = nodeStateFromHeartbeat(
      heartbeat({
        node_id: 'n1',
        ram_total_mb: 65536,
        vms: [
          {
            ...vmRecord('vm-1', { tenant_id: 'acme' }),
            disk_gb: 10,
            copies: { count: 2, every_s: 60 },
          },
          { ...vmRecord('vm-2', { tenant_id: 'acme' }), disk_gb: 5 },
        ],
      }),
      NOW,
    );
    expect(tenantUse([listed], 'acme', NOW, liveSince(NOW)).disk_gb).toBe(35);
    const request = { ram_mb: 512, vcpu_count: 1, disk_gb: 20, copies: { count: 1 } };
    expect(
      quotaExcesses({ disk_gb: 70 }, { vms: 2, ram_mb: 0, vcpus: 0, disk_gb: 35 }, request),
    ).toEqual([{ quota: 'disk_gb', use: 35, limit: 70, requested: 40 }]);
    expect(
      quotaExcesses(
        { disk_gb: 70 },
        { vms: 2, ram_mb: 0, vcpus: 0, disk_gb: 35 },
        { ...request, copies: undefined },
      ),
    ).toEqual([]);
  });
});

describe('quotaExcesses', () => {
  const use = { vms: 2, ram_mb: 3072, vcpus: 3, disk_gb: 40 };
  const request = { ram_mb: 1024, vcpu_count: 1, disk_gb: 10 };

  it('lets a create that reaches a limit exactly through, and names every limit it would pass', () => {
    expect(quotaExcesses({ vms: 3, ram_mb: 4096, vcpus: 4, disk_gb: 50 }, use, request)).toEqual(
      [],
    );
    expect(quotaExcesses({}, use, request)).toEqual([]);
    const excesses = quotaExcesses({ vms: 2, ram_mb: 4000, vcpus: 8 }, use, request);
    expect(excesses).toEqual([
      { quota: 'vms', use: 2, limit: 2, requested: 1 },
      { quota: 'ram_mb', use: 3072, limit: 4000, requested: 1024 },
    ]);
    expect(describeQuotaExcesses('acme', excesses)).toBe(
      'tenant acme would go beyond its quota, nothing was made: vms: 2 VMs in use + 1 requested > limit 2 VMs; ram_mb: 3072 MB in use + 1024 requested > limit 4000 MB',
    );
    expect(
      quotaExcesses({ vms: 0 }, { vms: 0, ram_mb: 0, vcpus: 0, disk_gb: 0 }, request),
    ).toHaveLength(1);
  });
});
