import {
  CRASH_LOOP_FAILURES,
  RESTART_BACKOFF_FIRST_MS,
  RESTART_BACKOFF_LONGEST_MS,
  STEADY_RUN_MS,
  inCrashLoop,
  ranSteadily,
  restartDelayMs,
} from './restart-policy';

describe('restart policy', () => {
  it('starts at once without failures, then waits 5 s doubling', () => {
    expect(restartDelayMs(0)).toBe(0);
    expect(restartDelayMs(1)).toBe(RESTART_BACKOFF_FIRST_MS);
    expect(restartDelayMs(2)).toBe(10_000);
    expect(restartDelayMs(3)).toBe(20_000);
    expect(restartDelayMs(6)).toBe(160_000);
  });

  it('never waits longer than 5 min, however many failures', () => {
    expect(restartDelayMs(7)).toBe(RESTART_BACKOFF_LONGEST_MS);
    expect(restartDelayMs(1_000_000)).toBe(RESTART_BACKOFF_LONGEST_MS);
  });

  it('calls a VM crash-looping from the third failure in a row', () => {
    expect(CRASH_LOOP_FAILURES).toBe(3);
    expect(inCrashLoop(2)).toBe(false);
    expect(inCrashLoop(3)).toBe(true);
  });

  it('forgets failures after 10 min of steady running', () => {
    expect(ranSteadily(1_000, 1_000 + STEADY_RUN_MS - 1)).toBe(false);
    expect(ranSteadily(1_000, 1_000 + STEADY_RUN_MS)).toBe(true);
  });
});
