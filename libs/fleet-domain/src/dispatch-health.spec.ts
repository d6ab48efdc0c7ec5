import {
  DISPATCH_BACKOFF_MAX_MS,
  dispatchBackoffMs,
  dispatchRetryAtMs,
  dispatchTrouble,
  withDispatchFailure,
} from './dispatch-health';
import { PlacementCandidate, placeVm } from './placement';

describe('dispatch health', () => {
  it('backs off 5 s after one failure, doubling with each in a row, up to a minute', () => {
    expect([1, 2, 3, 4, 5, 6, 40].map(dispatchBackoffMs)).toEqual([
      5_000,
      10_000,
      20_000,
      40_000,
      DISPATCH_BACKOFF_MAX_MS,
      DISPATCH_BACKOFF_MAX_MS,
      DISPATCH_BACKOFF_MAX_MS,
    ]);
    expect(dispatchBackoffMs(0)).toBe(0);
  });

  it('passes a failing node over until its backoff is over, naming the count and the reason', () => {
    let failures = withDispatchFailure(undefined, 'unreachable', 1_000);
    expect(dispatchTrouble(failures, 1_000)).toBe(
      'dispatch failed once in the last 40 s: unreachable (tried again in 5.0 s)',
    );
    expect(dispatchTrouble(failures, 5_999)).toBeDefined();
    expect(dispatchTrouble(failures, 6_000)).toBeUndefined();
    failures = withDispatchFailure(failures, 'unreachable', 6_000);
    failures = withDispatchFailure(failures, 'no answer within 10000 ms', 16_000);
    expect(dispatchRetryAtMs(failures)).toBe(36_000);
    expect(dispatchTrouble(failures, 20_000)).toBe(
      'dispatch failed 3 times in the last 40 s: no answer within 10000 ms (tried again in 16.0 s)',
    );
  });

  it('counts only the failures of the window, and keeps the streak beyond the times it keeps', () => {
    let failures = withDispatchFailure(undefined, 'ECONNRESET', 0);
    for (let i = 1; i <= 10; i++)
      failures = withDispatchFailure(failures, 'ECONNRESET', i * 60_000);
    expect(failures.at_ms).toHaveLength(8);
    expect(failures.in_a_row).toBe(11);
    expect(dispatchTrouble(failures, 600_000 + 1)).toMatch(
      /^dispatch failed once in the last 40 s/,
    );
  });

  it('bounds the reason it keeps', () => {
    expect(withDispatchFailure(undefined, 'x'.repeat(500), 0).reason).toHaveLength(80);
  });

  it('has nothing to say of a node that never failed', () => {
    expect(dispatchTrouble(undefined, 0)).toBeUndefined();
    expect(dispatchRetryAtMs(undefined)).toBeUndefined();
  });
});

describe('placement and a node whose dispatches fail', () => {
  const node = (node_id: string, ram_available_mb: number, dispatch_trouble?: string) =>
    ({
      node_id,
      ram_available_mb,
      kvm_available: false,
      reserved: false,
      dispatch_trouble,
    }) as PlacementCandidate;
  const trouble = 'dispatch failed 3 times in the last 40 s: unreachable (tried again in 9.0 s)';
  const request = { ram_mb: 1024, prefer_kvm: false };

  it('places on the next best node, naming why the sick one was passed over', () => {
    const placement = placeVm(request, [node('sick', 20_000, trouble), node('ok', 4_000)]);
    expect(placement).toEqual({
      kind: 'placed',
      node_id: 'ok',
      required_free_mb: 1536,
      passed_over: [`sick: ${trouble}`],
    });
  });

  it('answers no-capacity with the trouble when no other node fits', () => {
    const placement = placeVm(request, [node('sick', 20_000, trouble), node('small', 1_000)]);
    expect(placement.kind).toBe('no-capacity');
    expect(placement.kind !== 'placed' && placement.message).toContain(`sick: ${trouble}`);
  });

  it('refuses a preferred node in backoff with the trouble (422), trying no other', () => {
    const placement = placeVm({ ...request, preferred_node: 'sick' }, [
      node('sick', 20_000, trouble),
      node('ok', 4_000),
    ]);
    expect(placement).toEqual({
      kind: 'preferred-node-unfit',
      message: `preferred_node sick: ${trouble}`,
    });
  });
});
