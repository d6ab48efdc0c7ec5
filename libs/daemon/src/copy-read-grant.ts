import { grantMac, signedGrantFields } from './copy-grant';

/**
 * The prefix of a read grant's HMAC message: not a copy grant's, so a read grant never opens a
 * write route (nor a copy grant the read route), whichever agent version checks it.
 */
export const COPY_READ_GRANT_CONTEXT = 'ppn-copy-read-grant:v1:';

/** What a read grant allows: node `reader` to read VM `vm`'s copy held on node `holder`. */
export interface CopyReadGrant {
  vm: string;
  holder: string;
  reader: string;
  /** The controller's wall-clock milliseconds when it issued it (the restore's moment). */
  issuedAtMs: number;
  /** Wall-clock milliseconds after which the holder refuses it. */
  expiresAtMs: number;
  /**
   * The read moves the VM (a restore keeping its id, not one as a new VM beside it): the holder
   * then takes no copy grant issued before it (the VM's old node's).
   */
  moves: boolean;
}

/**
 * A grant the controller issues for a restore on a node that does not hold the copy: signed
 * with the HOLDER's node token (undefined when the agents are open), as a copy grant is, so the
 * holder checks it with the token it holds: base64url(JSON payload) "." base64url(HMAC-SHA256(
 * key = holder's token, message = "ppn-copy-read-grant:v1:" + payload)), both unpadded.
 */
export function signCopyReadGrant(holderToken: string | undefined, grant: CopyReadGrant): string {
  const payload = Buffer.from(
    JSON.stringify({
      v: 1,
      vm: grant.vm,
      holder: grant.holder,
      reader: grant.reader,
      iat: grant.issuedAtMs,
      exp: grant.expiresAtMs,
      mv: grant.moves,
    }),
    'utf8',
  ).toString('base64url');
  return `${payload}.${grantMac(COPY_READ_GRANT_CONTEXT, holderToken, payload)}`;
}

/**
 * The read grant `presented` carries, when signed with this node's token (`ownToken`), naming
 * this node (`ownNodeId`) as its holder and not expired at `nowMs`; otherwise why not (never
 * echoing the grant).
 */
export function verifyCopyReadGrant(
  ownToken: string | undefined,
  ownNodeId: string,
  presented: string,
  nowMs: number,
): CopyReadGrant | { refused: string } {
  const signed = signedGrantFields(COPY_READ_GRANT_CONTEXT, ownToken, presented);
  if ('refused' in signed) return signed;
  const { v, vm, holder, reader, iat, exp, mv } = signed.fields;
  if (
    v !== 1 ||
    typeof vm !== 'string' ||
    typeof holder !== 'string' ||
    typeof reader !== 'string' ||
    typeof iat !== 'number' ||
    !Number.isFinite(iat) ||
    typeof exp !== 'number' ||
    !Number.isFinite(exp) ||
    typeof mv !== 'boolean'
  ) {
    return { refused: 'malformed grant' };
  }
  if (holder !== ownNodeId) return { refused: 'grant for another node' };
  if (exp <= nowMs) return { refused: 'grant expired' };
  return { vm, holder, reader, issuedAtMs: iat, expiresAtMs: exp, moves: mv };
}
