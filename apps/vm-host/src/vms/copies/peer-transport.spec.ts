import { Throttle, splitAddress } from './peer-transport';

describe('Throttle: the most a node sends of its copies', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('lets bytes go at the rate, one piece after the other, shared by every sender', async () => {
    let now = 0;
    const throttle = new Throttle(1_000_000, () => now);
    const gone: string[] = [];
    void throttle.take(500_000).then(() => gone.push('a'));
    void throttle.take(500_000).then(() => gone.push('b'));
    void throttle.take(1_000_000).then(() => gone.push('c'));
    await jest.advanceTimersByTimeAsync(0);
    expect(gone).toEqual(['a']);
    now = 499;
    await jest.advanceTimersByTimeAsync(499);
    expect(gone).toEqual(['a']);
    now = 500;
    await jest.advanceTimersByTimeAsync(1);
    expect(gone).toEqual(['a', 'b']);
    now = 1000;
    await jest.advanceTimersByTimeAsync(500);
    expect(gone).toEqual(['a', 'b', 'c']);
  });

  it('waits for nothing at 0 (unlimited)', async () => {
    const throttle = new Throttle(0, () => 0);
    let done = false;
    void throttle.take(10 ** 12).then(() => (done = true));
    await jest.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });
});

describe('splitAddress', () => {
  it('reads an IPv4 and a bracketed IPv6 peer address', () => {
    expect(splitAddress('10.8.0.2:9204')).toEqual({ host: '10.8.0.2', port: 9204 });
    expect(splitAddress('[fd00::2]:9204')).toEqual({ host: 'fd00::2', port: 9204 });
  });
});
