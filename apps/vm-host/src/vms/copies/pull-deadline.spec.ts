import type { AgentRestoreRequest } from '@app/fleet-domain';
import { restoredAtMs } from './restored-disk-size';
import { MAX_PULL_MS, pullDeadline } from './pull-deadline';

const grantExpiring = (exp: number) =>
  `${Buffer.from(JSON.stringify({ v: 1, exp })).toString('base64url')}.${'x'.repeat(43)}`;

describe('pullDeadline', () => {
  it("is the read grant's expiry, or the caller's deadline when sooner", () => {
    expect(pullDeadline(grantExpiring(5_000), 1_000)).toBe(5_000);
    expect(pullDeadline(grantExpiring(5_000), 1_000, 3_000)).toBe(3_000);
  });

  it('is at most MAX_PULL_MS away when the grant says no expiry', () => {
    expect(pullDeadline('not.a-grant', 1_000)).toBe(1_000 + MAX_PULL_MS);
  });
});

describe('restoredAtMs', () => {
  it("is the controller's issued_at, else this node's clock", () => {
    const request = { issued_at: '2026-12-05T04:17:00.123Z' } as AgentRestoreRequest;
    expect(restoredAtMs(request, 5)).toBe(Date.parse('2026-12-05T04:17:00.123Z'));
    expect(restoredAtMs({} as AgentRestoreRequest, 5)).toBe(5);
  });
});
