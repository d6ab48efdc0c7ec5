import { ID_PATTERN, ID_RULE } from './ids';
import { NodeState, isHoldLive } from './node-state';
import { listedVms } from './node-vm-listing';

/** What a tenant's quota may limit: its VMs, and their RAM, vCPUs and disks summed. */
export const QUOTA_KEYS = ['vms', 'ram_mb', 'vcpus', 'disk_gb'] as const;
export type QuotaKey = (typeof QUOTA_KEYS)[number];

/** A tenant's limits; a key left out is no limit. */
export type TenantQuota = Partial<Record<QuotaKey, number>>;

/** What a tenant holds in the fleet, as its quota counts it. */
export type TenantUse = Record<QuotaKey, number>;

/** The largest limit taken: beyond any fleet (and a safe integer). */
export const MAX_QUOTA_LIMIT = 1_000_000_000;

/** Tenants a quotas file may name: every one's token is derived at start. */
export const MAX_TENANTS = 10_000;

/** The quotas file, read: each tenant's quota, and every problem found, each naming its entry. */
export interface ParsedTenantQuotas {
  quotas: Map<string, TenantQuota>;
  problems: string[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * VM_FLEET_TENANT_QUOTAS_FILE's JSON, `{"acme": {"vms": 5, "ram_mb": 8192, "vcpus": 8,
 * "disk_gb": 100}, "globex": {}}`: every tenant the controller knows (their tokens are taken),
 * each with its limits, a key left out meaning no limit. Every bad entry is named in
 * `problems` (a tenant id that is not a fleet id, an entry that is not an object, an unknown
 * key, a limit that is not a whole number from 0 to MAX_QUOTA_LIMIT); nothing is taken then.
 */
export function parseTenantQuotas(value: unknown): ParsedTenantQuotas {
  const quotas = new Map<string, TenantQuota>();
  const problems: string[] = [];
  if (!isPlainObject(value)) {
    return {
      quotas,
      problems: [
        'the file must hold one JSON object of tenant id to quota, such as {"acme": {"vms": 5}}',
      ],
    };
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_TENANTS) problems.push(`more than ${MAX_TENANTS} tenants`);
  for (const [tenantId, quota] of entries.slice(0, MAX_TENANTS)) {
    // Shown as JSON: a hostile id cannot break the line it is named on.
    const named = JSON.stringify(tenantId.slice(0, 140));
    if (!ID_PATTERN.test(tenantId)) {
      problems.push(`tenant ${named}: a tenant id must be ${ID_RULE}`);
      continue;
    }
    if (!isPlainObject(quota)) {
      problems.push(
        `tenant ${named}: its quota must be an object such as {"vms": 5} ({} for none)`,
      );
      continue;
    }
    const taken: TenantQuota = {};
    for (const [key, limit] of Object.entries(quota)) {
      if (!(QUOTA_KEYS as readonly string[]).includes(key)) {
        problems.push(
          `tenant ${named}: ${JSON.stringify(key.slice(0, 40))} is not a quota (${QUOTA_KEYS.join(', ')})`,
        );
      } else if (
        typeof limit !== 'number' ||
        !Number.isInteger(limit) ||
        limit < 0 ||
        limit > MAX_QUOTA_LIMIT
      ) {
        problems.push(
          `tenant ${named}: ${key} must be a whole number from 0 to ${MAX_QUOTA_LIMIT}`,
        );
      } else {
        taken[key as QuotaKey] = limit;
      }
    }
    quotas.set(tenantId, taken);
  }
  return { quotas, problems };
}

/** A VM's share of its tenant's quotas. */
export interface QuotaRequest {
  ram_mb: number;
  vcpu_count: number;
  disk_gb?: number;
  /** The copies kept of it on other nodes: each takes its disk again. */
  copies?: { count: number };
}

/**
 * The disk a VM counts against a `disk_gb` quota: its own and each copy's, disk_gb × (1 +
 * copies.count). A create counts the copies it will have (the controller fills in its
 * defaults, VM_FLEET_COPIES, before asking); a listed VM the policy its agent reports.
 */
export function countedDiskGb(diskGb: number | undefined, copies?: { count: number }): number {
  return (diskGb ?? 0) * (1 + (copies?.count ?? 0));
}

/**
 * What `tenantId` holds in the fleet: every VM the stored nodes list for it (live nodes, those
 * kept silent, and VMs of earlier agents: listedVms, so a heartbeat, which only replaces a
 * node's list with the agent's own, never loses one, and a restarted controller on Redis reads
 * the same), and the creates in flight for it (live holds naming it whose VM is not listed
 * yet). A VM reported without disk_gb counts no disk; one with copies its disk once more for
 * each (countedDiskGb), `defaultCopies` (the controller's, VM_FLEET_COPIES) when its policy is
 * not reported (a VM just made, before its node's heartbeat lists it); a hold names the disk
 * already counted so.
 */
export function tenantUse(
  nodes: readonly NodeState[],
  tenantId: string,
  nowMs: number,
  notBeforeMs: number,
  defaultCopies?: { count: number },
): TenantUse {
  const use: TenantUse = { vms: 0, ram_mb: 0, vcpus: 0, disk_gb: 0 };
  const listed = new Set<string>();
  for (const { vm } of listedVms(nodes, notBeforeMs)) {
    listed.add(vm.vm_id);
    if (vm.tenant_id !== tenantId) continue;
    use.vms += 1;
    use.ram_mb += vm.ram_alloc_mb;
    use.vcpus += vm.vcpu_count;
    use.disk_gb += countedDiskGb(vm.disk_gb, vm.copies ?? defaultCopies);
  }
  for (const node of nodes) {
    for (const holdId in node.holds) {
      const hold = node.holds[holdId];
      if (hold.tenant?.tenant_id !== tenantId || !isHoldLive(hold, nowMs)) continue;
      if (hold.vm_id !== undefined && listed.has(hold.vm_id)) continue;
      use.vms += 1;
      use.ram_mb += hold.ram_mb;
      use.vcpus += hold.tenant.vcpu_count;
      use.disk_gb += hold.tenant.disk_gb ?? 0;
    }
  }
  return use;
}

/** One quota a create would go beyond. */
export interface QuotaExcess {
  quota: QuotaKey;
  /** What the tenant holds now. */
  use: number;
  limit: number;
  /** What the create would add. */
  requested: number;
}

/** What `request` adds to each quota. */
export function quotaRequestOf(request: QuotaRequest): TenantUse {
  return {
    vms: 1,
    ram_mb: request.ram_mb,
    vcpus: request.vcpu_count,
    disk_gb: countedDiskGb(request.disk_gb, request.copies),
  };
}

/** Every quota of `quota` that `use` plus `request` would go beyond; [] when it fits. */
export function quotaExcesses(
  quota: TenantQuota,
  use: TenantUse,
  request: QuotaRequest,
): QuotaExcess[] {
  const adds = quotaRequestOf(request);
  const excesses: QuotaExcess[] = [];
  for (const key of QUOTA_KEYS) {
    const limit = quota[key];
    if (limit !== undefined && use[key] + adds[key] > limit) {
      excesses.push({ quota: key, use: use[key], limit, requested: adds[key] });
    }
  }
  return excesses;
}

/** The units each quota is counted in, for messages. */
const UNITS: Record<QuotaKey, string> = {
  vms: 'VMs',
  ram_mb: 'MB',
  vcpus: 'vCPUs',
  disk_gb: 'GiB',
};

/** "tenant acme is over its quota: ram_mb: 7168 MB used + 2048 requested > limit 8192 MB". */
export function describeQuotaExcesses(tenantId: string, excesses: readonly QuotaExcess[]): string {
  return `tenant ${tenantId} would go beyond its quota, nothing was made: ${excesses
    .map(
      ({ quota, use, limit, requested }) =>
        `${quota}: ${use} ${UNITS[quota]} in use + ${requested} requested > limit ${limit} ${UNITS[quota]}`,
    )
    .join('; ')}`;
}
