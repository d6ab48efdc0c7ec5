import {
  ConsoleSessions,
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

  it('keeps a session across a restart with the same token', () => {
    const session = sessions.issue(NOW_S);
    expect(new ConsoleSessions('api-token-1a7f3c9e5b0d2864').isValid(session, NOW_S)).toBe(true);
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
});
