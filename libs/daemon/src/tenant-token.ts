import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { IsBearerToken } from './environment';

/** The fixed prefix of the HMAC message, versioned as the node tokens' is (node-token.ts). */
export const TENANT_TOKEN_CONTEXT = 'ppn-tenant-token:v1:';

/**
 * Tenant `tenantId`'s token under the fleet's tenant secret (VM_FLEET_TENANT_SECRET):
 * base64url(HMAC-SHA256(key = secret, message = "ppn-tenant-token:v1:" + tenant_id)), unpadded.
 * Stateless, so every controller (and `ppn-fleet tenant-token`, and openssl) derives the same one.
 */
export function deriveTenantToken(secret: string, tenantId: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(TENANT_TOKEN_CONTEXT + tenantId, 'utf8')
    .digest('base64url');
}

/** Shortest tenant secret: it is the key of every tenant's token, as the node secret is. */
export const MIN_TENANT_SECRET_LENGTH = 32;

/** The tenant secret variable: the other tokens' rules, at least MIN_TENANT_SECRET_LENGTH characters. */
export function IsTenantSecret(variable = '$property'): PropertyDecorator {
  return IsBearerToken(variable, MIN_TENANT_SECRET_LENGTH);
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * The tenants a controller knows, each with its token derived from the secret: which tenant a
 * presented bearer token belongs to. A token names no tenant by itself (it is only an HMAC), so
 * the controller derives the token of every tenant it knows (VM_FLEET_TENANT_QUOTAS_FILE's
 * entries) at start and compares the presented one with each, in constant time; only digests
 * are kept.
 */
export class TenantTokens {
  private readonly digests: ReadonlyArray<readonly [string, Buffer]>;

  constructor(secret: string, tenantIds: readonly string[]) {
    this.digests = tenantIds.map((id) => [id, digest(deriveTenantToken(secret, id))] as const);
  }

  /** The tenant whose token `presented` is; undefined for any other token. */
  tenantOf(presented: string): string | undefined {
    const given = digest(presented);
    let found: string | undefined;
    // Every tenant compared, found or not: the time taken says nothing of which one matched.
    for (const [id, expected] of this.digests) {
      if (timingSafeEqual(expected, given) && found === undefined) found = id;
    }
    return found;
  }

  get size(): number {
    return this.digests.length;
  }
}
