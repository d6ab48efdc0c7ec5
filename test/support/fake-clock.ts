import { Clock } from '@app/daemon';

/** A clock the test moves by hand. */
export class FakeClock extends Clock {
  constructor(private current = Date.UTC(2026, 7, 6, 12, 0, 0)) {
    super();
  }

  now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.current += ms;
  }
}
