/** Runs work one at a time per key, in call order; work on other keys runs meanwhile. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** True while work for this key runs or waits. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => done);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
