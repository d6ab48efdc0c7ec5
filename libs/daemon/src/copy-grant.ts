import { createHmac } from 'node:crypto';
import { tokensMatch } from './bearer-token.guard';

/** The fixed prefix of a grant's HMAC message, versioned like the node tokens'. */
export const COPY_GRANT_CONTEXT = 'ppn-copy-grant:v1:';
/**
 * A move grant's: the same form, signed under another context so that a copy grant (which every
 * copy peer's source holds) never opens a move route, nor a move grant a copy route.
 */
export const MOVE_GRANT_CONTEXT = 'ppn-move-grant:v1:';

/** What a copy grant allows: node `source` to write and read VM `vm`'s copy on node `peer`. */
export interface CopyGrant {
  vm: string;
  source: string;
  peer: string;
  /** Wall-clock milliseconds after which the peer refuses it. */
  expiresAtMs: number;
  /**
   * The controller's wall-clock milliseconds when it issued the grant (`iat`): the peer refuses
   * a grant issued before its copy's current chain began or before the VM's last restore
   * (replica-grant-floor.ts). Absent in a grant of a controller before it.
   */
  issuedAtMs?: number;
}

/**
 * A grant the controller issues for a VM's copy on a peer, signed with that peer's node token
 * (`peerToken`; undefined when the agents are open), so the peer checks it with the token it
 * already holds and no new secret is shared: base64url(JSON payload) "." base64url(HMAC-SHA256(
 * key = peer's token, message = "ppn-copy-grant:v1:" + payload)), both unpadded.
 */
export function signCopyGrant(
  peerToken: string | undefined,
  grant: CopyGrant,
  context = COPY_GRANT_CONTEXT,
): string {
  const payload = Buffer.from(
    JSON.stringify({
      v: 1,
      vm: grant.vm,
      src: grant.source,
      peer: grant.peer,
      exp: grant.expiresAtMs,
      ...(grant.issuedAtMs === undefined ? {} : { iat: grant.issuedAtMs }),
    }),
    'utf8',
  ).toString('base64url');
  return `${payload}.${grantMac(context, peerToken, payload)}`;
}

/**
 * The grant `presented` carries, when it was signed with this node's token (`ownToken`),
 * names this node (`ownNodeId`) as its peer and has not expired at
 * `nowMs`; otherwise why not (never echoing the grant).
 */
export function verifyCopyGrant(
  ownToken: string | undefined,
  ownNodeId: string,
  presented: string,
  nowMs: number,
  context = COPY_GRANT_CONTEXT,
): CopyGrant | { refused: string } {
  const signed = signedGrantFields(context, ownToken, presented);
  if ('refused' in signed) return signed;
  const { v, vm, src, peer, exp, iat } = signed.fields;
  if (v !== 1 || typeof vm !== 'string' || typeof src !== 'string' || typeof peer !== 'string') {
    return { refused: 'malformed grant' };
  }
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return { refused: 'malformed grant' };
  if (iat !== undefined && (typeof iat !== 'number' || !Number.isFinite(iat))) {
    return { refused: 'malformed grant' };
  }
  if (peer !== ownNodeId) return { refused: 'grant for another node' };
  if (exp <= nowMs) return { refused: 'grant expired' };
  return {
    vm,
    source: src,
    peer,
    expiresAtMs: exp,
    ...(iat === undefined ? {} : { issuedAtMs: iat }),
  };
}

/**
 * The expiry a grant states (`exp`, wall-clock ms), read without checking its MAC: for its
 * holder, which cannot check it (the peer's token signed it), to know when the peer will refuse
 * it. Never a reason to trust it. Undefined when the grant has no readable `exp`.
 */
export function grantExpiryOf(grant: string): number | undefined {
  const parts = grantParts(grant);
  const exp = parts && payloadFields(parts.payload)?.exp;
  // Within Date's range, so that it can be shown as a time.
  return typeof exp === 'number' && Math.abs(exp) <= MAX_DATE_MS ? exp : undefined;
}

/** The largest wall-clock milliseconds a Date holds. */
const MAX_DATE_MS = 8.64e15;

/** A grant's payload and MAC, when it has the form (bounded: a grant is short). */
function grantParts(grant: string): { payload: string; mac: string } | undefined {
  const dot = grant.indexOf('.');
  if (dot <= 0 || grant.length > 1024) return undefined;
  return { payload: grant.slice(0, dot), mac: grant.slice(dot + 1) };
}

/** The JSON object a payload encodes, if it is one. */
function payloadFields(payload: string): Record<string, unknown> | undefined {
  try {
    const fields: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return typeof fields === 'object' && fields !== null
      ? (fields as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The JSON fields of a grant `presented` (base64url payload "." MAC), when its MAC under
 * `context` keyed with this node's token (`ownToken`) matches; otherwise why not (never echoing
 * the grant). Each kind of grant then checks its own fields.
 */
export function signedGrantFields(
  context: string,
  ownToken: string | undefined,
  presented: string,
): { fields: Record<string, unknown> } | { refused: string } {
  const parts = grantParts(presented);
  if (!parts) return { refused: 'malformed grant' };
  if (!tokensMatch(grantMac(context, ownToken, parts.payload), parts.mac)) {
    return { refused: 'grant not signed for this node' };
  }
  const fields = payloadFields(parts.payload);
  return fields ? { fields } : { refused: 'malformed grant' };
}

/** HMAC-SHA256 of `context` + `payload` keyed with `token` (the empty key when open), base64url. */
export function grantMac(context: string, token: string | undefined, payload: string): string {
  return createHmac('sha256', Buffer.from(token ?? '', 'utf8'))
    .update(context + payload, 'utf8')
    .digest('base64url');
}
