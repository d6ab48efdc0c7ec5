import { KeyedMutex } from './keyed-mutex';

/** A promise the test settles by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('KeyedMutex', () => {
  it('runs work of one key one at a time, in call order, and other keys meanwhile', async () => {
    const mutex = new KeyedMutex();
    const order: string[] = [];
    const first = gate();
    const a1 = mutex.run('a', async () => {
      order.push('a1 start');
      await first.promise;
      order.push('a1 end');
    });
    const a2 = mutex.run('a', () => Promise.resolve(void order.push('a2')));
    await mutex.run('b', () => Promise.resolve(void order.push('b')));
    expect(mutex.busy('a')).toBe(true);
    expect(order).toEqual(['a1 start', 'b']);
    first.open();
    await Promise.all([a1, a2]);
    expect(order).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
    expect(mutex.busy('a')).toBe(false);
  });

  it('goes on with the next work after one fails, passing the failure to its caller', async () => {
    const mutex = new KeyedMutex();
    const failed = mutex.run('a', () => Promise.reject(new Error('boom')));
    const next = mutex.run('a', () => Promise.resolve('next'));
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(mutex.busy('a')).toBe(false);
  });
});
