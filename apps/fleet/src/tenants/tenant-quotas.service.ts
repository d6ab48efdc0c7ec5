import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Clock } from '@app/daemon';
import {
  QuotaRequest,
  TenantQuota,
  TenantUse,
  liveSince,
  quotaExcesses,
  tenantUse,
} from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';
import { KeyClaims } from '../nodes/key-claims.repository';
import { NodesRepository } from '../nodes/nodes.repository';
import {
  TenantDiskSizeRequiredError,
  TenantQuotaBusyError,
  TenantQuotaExceededError,
} from './tenants.errors';

/**
 * How long a tenant's quota claim lasts when its holder dies: longer than a check and a hold
 * take (two reads and one write of the store), short enough that a dead holder blocks little.
 */
const QUOTA_CLAIM_MS = 10_000;
/** The most a create waits for another create of its tenant to finish its check. */
const QUOTA_CLAIM_WAIT_MS = 15_000;
const FIRST_WAIT_MS = 5;
const LONGEST_WAIT_MS = 100;

/** A tenant the controller knows, with its quota and what it uses now. */
export interface TenantStanding {
  tenant_id: string;
  quota: TenantQuota;
  use: TenantUse;
}

/**
 * The tenants' quotas (VM_FLEET_TENANT_QUOTAS_FILE) and their use, counted from the fleet's
 * own state: the VMs the stored nodes list for a tenant (silent ones too) and its creates in
 * flight (RAM holds naming it), so heartbeats and controller restarts change nothing of it.
 *
 * A create is checked in the same step as its RAM hold: under the tenant's claim, kept in the
 * store of fleet state (the Idempotency-Key claims' mechanism, KeyClaims), so of two creates of
 * one tenant on any controllers sharing the store, the second counts the first's hold. Only
 * creates of the same tenant wait for each other, and only for the check and the hold, never
 * for a dispatch.
 */
@Injectable()
export class TenantQuotas {
  private readonly quotas: ReadonlyMap<string, TenantQuota>;

  constructor(
    config: FleetConfig,
    private readonly nodes: NodesRepository,
    private readonly claims: KeyClaims,
    private readonly clock: Clock,
  ) {
    this.quotas = config.tenantQuotas ?? new Map();
    this.defaultCopies = { count: config.copies };
  }

  /** The copies a VM whose policy is not reported yet counts (VM_FLEET_COPIES). */
  private readonly defaultCopies: { count: number };

  /** The tenants the quotas file names, in its order. */
  get tenantIds(): string[] {
    return [...this.quotas.keys()];
  }

  quotaOf(tenantId: string): TenantQuota | undefined {
    return this.quotas.get(tenantId);
  }

  /** What `tenantId` uses now (see tenantUse). */
  async useOf(tenantId: string): Promise<TenantUse> {
    const now = this.clock.now();
    return tenantUse(await this.nodes.listAll(), tenantId, now, liveSince(now), this.defaultCopies);
  }

  /** Every tenant the quotas file names, with its quota and use: one read of the store. */
  async standings(): Promise<TenantStanding[]> {
    if (this.quotas.size === 0) return [];
    const now = this.clock.now();
    const stored = await this.nodes.listAll();
    return [...this.quotas].map(([tenant_id, quota]) => ({
      tenant_id,
      quota,
      use: tenantUse(stored, tenant_id, now, liveSince(now), this.defaultCopies),
    }));
  }

  /**
   * Runs `hold` (placement and its RAM hold, which names the tenant) once the tenant's use and
   * `request` fit its quota, under the tenant's claim: a TenantQuotaExceededError instead when
   * they do not (nothing made). A VM without a tenant, or of a tenant without limits, is held
   * at once.
   */
  async withinQuota<T>(
    tenantId: string | null | undefined,
    request: QuotaRequest,
    hold: () => Promise<T>,
  ): Promise<T> {
    const quota = tenantId ? this.quotas.get(tenantId) : undefined;
    if (!tenantId || quota === undefined || Object.keys(quota).length === 0) return hold();
    if (quota.disk_gb !== undefined && request.disk_gb === undefined) {
      throw new TenantDiskSizeRequiredError(tenantId);
    }
    const claim = await this.claim(tenantId);
    try {
      const use = await this.useOf(tenantId);
      const excesses = quotaExcesses(quota, use, request);
      if (excesses.length > 0) throw new TenantQuotaExceededError(tenantId, excesses);
      return await hold();
    } finally {
      // A release lost to the store ends at the claim's deadline.
      await this.claims.release(claim).catch(() => undefined);
    }
  }

  /** The tenant's quota claim, waited for while another create holds it. */
  private async claim(tenantId: string) {
    // Tenant ids are fleet ids and key hashes hex: the two never meet in the store.
    const keyHash = `tenant-quota:${tenantId}`;
    // Real time: this bounds how long the client waits.
    const waitUntil = performance.now() + QUOTA_CLAIM_WAIT_MS;
    let waitMs = FIRST_WAIT_MS;
    for (;;) {
      const claim = await this.claims.claim(keyHash, 'tenant-quota', QUOTA_CLAIM_MS);
      if (claim.kind === 'own') return claim;
      if (performance.now() >= waitUntil) throw new TenantQuotaBusyError(tenantId);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      waitMs = Math.min(2 * waitMs, LONGEST_WAIT_MS);
    }
  }
}
