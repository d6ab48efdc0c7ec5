import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The console's session cookie. */
export const SESSION_COOKIE = 'ppn_console_session';

/** The header every state-changing request of the page carries its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';

/** How long a session lasts after its login (or, on an open API, after it was issued). */
export const SESSION_LIFETIME_S = 8 * 60 * 60;

const VERSION = 'v1';

function mac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text, 'utf8').digest('base64url');
}

function same(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The most sessions kept at once: past it the oldest is ended (a page flood cannot grow it). */
export const MAX_SESSIONS = 10_000;

/**
 * Sessions of the web console: `v1.<expiry, epoch s>.<random>.<HMAC>` in the cookie, signed
 * with a key derived from VM_FLEET_API_TOKEN, and each one issued kept here until it expires or
 * is ended: logging out ends it on the controller (a copied cookie is refused after), changing
 * the token (a restart) ends every one, and so does a restart. The cookie proves the token was
 * given, it is not the token: the token itself never leaves the login request. On an open API (no
 * token) the key is random per process and a session is issued to whoever opens the page: it only
 * binds the CSRF token. The CSRF token is the HMAC of the session under the same key, so it is
 * valid for that one session only, and a page of another origin can neither read it nor send its
 * header.
 */
export class ConsoleSessions {
  private readonly key: Buffer;
  /** The live sessions' random parts, with their expiry (epoch s), oldest first. */
  private readonly live = new Map<string, number>();
  /** The tenant of each live session a tenant's token opened (none: the operator's). */
  private readonly tenants = new Map<string, string>();
  private readonly endListeners: Array<(cookie: string) => void> = [];

  constructor(
    /** VM_FLEET_API_TOKEN; undefined: the API is open and no login is asked for. */
    apiToken: string | undefined,
    private readonly random: (bytes: number) => Buffer = randomBytes,
  ) {
    this.key =
      apiToken === undefined
        ? random(32)
        : createHmac('sha256', apiToken).update('ppn-console-session-key:v1').digest();
  }

  /**
   * A new session valid until `nowS + SESSION_LIFETIME_S`; `tenantId`: one a tenant's token
   * opened, which sees and acts on that tenant's VMs only (kept here, with the session).
   */
  issue(nowS: number, tenantId?: string): string {
    const expiry = Math.floor(nowS) + SESSION_LIFETIME_S;
    const id = this.random(18).toString('base64url');
    for (const [oldId, oldExpiry] of this.live) {
      if (oldExpiry > nowS && this.live.size < MAX_SESSIONS) break;
      this.live.delete(oldId);
      this.tenants.delete(oldId);
    }
    this.live.set(id, expiry);
    if (tenantId !== undefined) this.tenants.set(id, tenantId);
    const body = `${VERSION}.${expiry}.${id}`;
    return `${body}.${mac(this.key, body)}`;
  }

  /** Ends a session on the controller: its cookie is refused from now on, wherever it was copied. */
  end(cookie: string): void {
    this.live.delete(cookie.split('.')[2]);
    this.tenants.delete(cookie.split('.')[2]);
    for (const listener of this.endListeners) listener(cookie);
  }

  /** Called with each session's cookie as it is ended (logout): its open terminals close. */
  onEnd(listener: (cookie: string) => void): void {
    this.endListeners.push(listener);
  }

  /** The tenant of a valid session a tenant's token opened; undefined for the operator's. */
  tenantOf(cookie: string): string | undefined {
    return this.tenants.get(cookie.split('.')[2]);
  }

  /** Whether `cookie` is a session this key signed that has not expired at `nowS`. */
  isValid(cookie: string | undefined, nowS: number): cookie is string {
    if (cookie === undefined || cookie.length > 200) return false;
    const parts = cookie.split('.');
    if (parts.length !== 4 || parts[0] !== VERSION || !/^[0-9]{1,12}$/.test(parts[1])) return false;
    const body = parts.slice(0, 3).join('.');
    if (!same(mac(this.key, body), parts[3])) return false;
    return Number(parts[1]) > nowS && this.live.has(parts[2]);
  }

  /** The expiry (epoch s) of a valid session. */
  expiryOf(cookie: string): number {
    return Number(cookie.split('.')[1]);
  }

  /** The CSRF token of a session: what its page sends in X-CSRF-Token. */
  csrfTokenOf(session: string): string {
    return mac(this.key, `csrf.${session}`);
  }

  /** Whether `presented` is the CSRF token of `session`. */
  isCsrfTokenOf(session: string, presented: string | undefined): boolean {
    return presented !== undefined && same(this.csrfTokenOf(session), presented);
  }
}

/** The value of one cookie in a Cookie header; undefined when it is not there. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie value of a session: HttpOnly, SameSite=Strict, Secure over TLS, an expiry. */
export function sessionCookie(session: string, maxAgeS: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${session}`,
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(maxAgeS))}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

/** The Set-Cookie value that ends the session in the browser. */
export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', 0, secure);
}
