import {
  ConsoleSessions,
  MAX_SESSIONS,
  SESSION_LIFETIME_S,
  clearedSessionCookie,
  cookieValue,
  sessionCookie,
} from './console-session';

const NOW_S = 1_780_000_000;

describe('console sessions', () => {
  const sessions = new ConsoleSessions('api-token-1a7f3c9e5b0d2864');

  it('takes a session it issued until it expires', () => {
    const session = sessions.issue(NOW_S);
    expect(sessions.isValid(session, NOW_S)).toBe(true);
    expect(sessions.isValid(session, NOW_S + SESSION_LIFETIME_S - 1)).toBe(true);
    expect(sessions.isValid(session, NOW_S + SESSION_LIFETIME_S)).toBe(false);
    expect(sessions.expiryOf(session)).toBe(NOW_S + SESSION_LIFETIME_S);
  });

  it('refuses a session it ended, or one it never issued though signed with its key', () => {
    const ended = sessions.issue(NOW_S);
    const kept = sessions.issue(NOW_S);
    sessions.end(ended);
    expect(sessions.isValid(ended, NOW_S)).toBe(false);
    expect(sessions.isValid(kept, NOW_S)).toBe(true);
    const restarted = new ConsoleSessions('api-token-1a7f3c9e5b0d2864');
    expect(restarted.isValid(kept, NOW_S)).toBe(false);
  });

  it(`keeps at most ${MAX_SESSIONS} sessions, ending the oldest first`, () => {
    const flooded = new ConsoleSessions(undefined);
    const first = flooded.issue(NOW_S);
    const second = flooded.issue(NOW_S);
    for (let i = 2; i < MAX_SESSIONS; i++) flooded.issue(NOW_S);
    expect(flooded.isValid(first, NOW_S)).toBe(true);
    const last = flooded.issue(NOW_S);
    expect(flooded.isValid(first, NOW_S)).toBe(false);
    expect(flooded.isValid(second, NOW_S)).toBe(true);
    expect(flooded.isValid(last, NOW_S)).toBe(true);
  });

  it('never contains the token', () => {
    expect(sessions.issue(NOW_S)).not.toContain('api-token');
  });

  it('refuses a changed expiry, a forged signature, garbage and nothing', () => {
    const session = sessions.issue(NOW_S);
    const [version, expiry, nonce, signature] = session.split('.');
    expect(
      sessions.isValid(`${version}.${Number(expiry) + 1000}.${nonce}.${signature}`, NOW_S),
    ).toBe(false);
    expect(sessions.isValid(`${version}.${expiry}.${nonce}.${'A'.repeat(43)}`, NOW_S)).toBe(false);
    expect(sessions.isValid('v1.x.y.z', NOW_S)).toBe(false);
    expect(sessions.isValid(`${session}.more`, NOW_S)).toBe(false);
    expect(sessions.isValid('', NOW_S)).toBe(false);
    expect(sessions.isValid(undefined, NOW_S)).toBe(false);
  });

  it("refuses another token's session, and an open API's random key's", () => {
    const session = sessions.issue(NOW_S);
    expect(new ConsoleSessions('another-token-0123456789abcdef').isValid(session, NOW_S)).toBe(
      false,
    );
    const open = new ConsoleSessions(undefined);
    expect(open.isValid(open.issue(NOW_S), NOW_S)).toBe(true);
    expect(new ConsoleSessions(undefined).isValid(open.issue(NOW_S), NOW_S)).toBe(false);
    expect(open.isValid(session, NOW_S)).toBe(false);
  });

  it("takes a session's own CSRF token only", () => {
    const one = sessions.issue(NOW_S);
    const other = sessions.issue(NOW_S);
    expect(sessions.isCsrfTokenOf(one, sessions.csrfTokenOf(one))).toBe(true);
    expect(sessions.isCsrfTokenOf(one, sessions.csrfTokenOf(other))).toBe(false);
    expect(sessions.isCsrfTokenOf(one, undefined)).toBe(false);
    expect(sessions.isCsrfTokenOf(one, '')).toBe(false);
  });
});

describe('console cookies', () => {
  it('reads one cookie of a header', () => {
    expect(cookieValue('a=1; ppn_console_session=v1.2.3.4; b=2', 'ppn_console_session')).toBe(
      'v1.2.3.4',
    );
    expect(cookieValue('a=1', 'ppn_console_session')).toBeUndefined();
    expect(cookieValue(undefined, 'ppn_console_session')).toBeUndefined();
  });

  it('sets HttpOnly, SameSite=Strict and an expiry, and Secure over TLS only', () => {
    expect(sessionCookie('v1.s', 3600, false)).toBe(
      'ppn_console_session=v1.s; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict',
    );
    expect(sessionCookie('v1.s', 3600, true)).toMatch(/; Secure$/);
    expect(clearedSessionCookie(false)).toContain('Max-Age=0');
  });

  it("keeps a tenant's session's tenant, and forgets it with the session", () => {
    const sessions = new ConsoleSessions('api-token-1a7f3c9e5b0d2864');
    const operator = sessions.issue(1_000);
    const acme = sessions.issue(1_000, 'acme');
    expect(sessions.tenantOf(operator)).toBeUndefined();
    expect(sessions.tenantOf(acme)).toBe('acme');
    sessions.end(acme);
    expect(sessions.isValid(acme, 1_001)).toBe(false);
    expect(sessions.tenantOf(acme)).toBeUndefined();
  });
});
