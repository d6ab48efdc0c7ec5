import { NODE_STALE_AFTER_MS } from './fleet.constants';
import {
  MAX_HEARTBEAT_INTERVAL_S,
  heartbeatRequestTimeoutMs,
  keepsNodeListed,
  longestHeartbeatGapMs,
} from './heartbeat-interval';

describe('the heartbeat interval that keeps a node listed', () => {
  it('times a request out at 80% of the interval, at most 5 s', () => {
    expect(heartbeatRequestTimeoutMs(1_000)).toBe(800);
    expect(heartbeatRequestTimeoutMs(5_000)).toBe(4_000);
    expect(heartbeatRequestTimeoutMs(10_000)).toBe(5_000);
  });

  it('counts the jitter, both request timeouts and reading the VMs in the longest gap', () => {
    // 10 s + 10% jitter, two 5 s timeouts, 2 s reading the VMs.
    expect(longestHeartbeatGapMs(10)).toBe(11_000 + 10_000 + 2_000);
    expect(longestHeartbeatGapMs(1)).toBe(1_100 + 1_600 + 2_000);
  });

  it('is at most 16 s: 17.6 s + 10 s + 2 s stays under the 30 s after which a node is dropped', () => {
    expect(NODE_STALE_AFTER_MS).toBe(30_000);
    expect(MAX_HEARTBEAT_INTERVAL_S).toBe(16);
    expect(longestHeartbeatGapMs(16)).toBe(29_600);
    expect(longestHeartbeatGapMs(17)).toBe(30_700);
  });

  it.each([1, 5, 10, 16])('keeps a node beating every %i s listed', (intervalS) => {
    expect(keepsNodeListed(intervalS)).toBe(true);
  });

  it.each([17, 30, 45])('lets a node beating every %i s drop out', (intervalS) => {
    expect(keepsNodeListed(intervalS)).toBe(false);
  });
});
