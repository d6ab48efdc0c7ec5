import { FakeClock } from '../../../../test/support/fake-clock';
import { CallLimit, SharedRead } from './shared-read';

describe('SharedRead', () => {
  it('runs once for the callers under way and within the interval, again after it', async () => {
    const clock = new FakeClock();
    let reads = 0;
    const shared = new SharedRead(clock, 2_000, 4, () => Promise.resolve(++reads));
    expect(await Promise.all([shared.get(), shared.get(), shared.get()])).toEqual([1, 1, 1]);
    clock.advance(1_999);
    expect(await shared.get()).toBe(1);
    clock.advance(1);
    expect(await shared.get()).toBe(2);
    shared.expire();
    expect(await shared.get()).toBe(3);
    expect(shared.latest()).toBe(3);
  });

  it('waits busyFactor times a slow read before the next, and keeps no failure', async () => {
    const clock = new FakeClock();
    let reads = 0;
    let fail = false;
    const shared = new SharedRead(clock, 2_000, 4, () => {
      reads++;
      clock.advance(1_000);
      return fail ? Promise.reject(new Error('agents unreachable')) : Promise.resolve(reads);
    });
    expect(await shared.get()).toBe(1);
    clock.advance(2_999);
    expect(await shared.get()).toBe(1);
    clock.advance(1);
    fail = true;
    await expect(shared.get()).rejects.toThrow('agents unreachable');
    fail = false;
    expect(await shared.get()).toBe(3);
  });
});

describe('CallLimit', () => {
  it('runs at most its limit at once, the others in turn, through failures', async () => {
    const limit = new CallLimit(3);
    let running = 0;
    let most = 0;
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, index) =>
        limit.run(async () => {
          most = Math.max(most, ++running);
          await new Promise((resolve) => setImmediate(resolve));
          running--;
          if (index % 5 === 0) throw new Error(`call ${index}`);
          return index;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(results.filter(({ status }) => status === 'fulfilled')).toHaveLength(16);
    expect(await limit.run(() => Promise.resolve('free again'))).toBe('free again');
  });
});
