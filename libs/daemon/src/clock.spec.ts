import { MonotonicClock, SystemClock } from './clock';

describe('MonotonicClock', () => {
  it('measures what elapsed whichever way the wall clock steps, and shows the wall clock', () => {
    let wall = Date.UTC(2026, 7, 6, 12, 0, 0);
    let monotonic = 5_000.25;
    const clock = new MonotonicClock(
      () => wall,
      () => monotonic,
    );
    const start = clock.now();
    expect(start).toBe(wall);

    wall -= 3_600_000; // stepped back an hour
    wall += 40_000;
    monotonic += 40_000;
    expect(clock.now() - start).toBe(40_000);
    expect(clock.wallNow()).toBe(Date.UTC(2026, 7, 6, 11, 0, 40));

    wall += 7_200_000 + 1_000; // and forward two
    monotonic += 1_000;
    expect(clock.now() - start).toBe(41_000);
    expect(clock.wallNow()).toBe(Date.UTC(2026, 7, 6, 13, 0, 41));
  });

  it('starts at the wall clock when built from the real sources', () => {
    const before = Date.now();
    const clock = new MonotonicClock();
    expect(clock.now()).toBeGreaterThanOrEqual(before - 1);
    expect(clock.now()).toBeLessThanOrEqual(Date.now() + 1);
  });
});

describe('SystemClock', () => {
  it('reads the wall clock for both', () => {
    const clock = new SystemClock();
    expect(Math.abs(clock.now() - clock.wallNow())).toBeLessThan(50);
  });
});
