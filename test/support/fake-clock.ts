import { Clock } from '@app/daemon';

/**
 * A clock the test moves by hand: advance() moves both readings, as time passing does;
 * stepWall() moves only the wall clock, as `date -s` or NTP stepping it does.
 */
export class FakeClock extends Clock {
  private wallOffsetMs = 0;

  constructor(private current = Date.UTC(2026, 7, 6, 12, 0, 0)) {
    super();
  }

  now(): number {
    return this.current;
  }

  override wallNow(): number {
    return this.current + this.wallOffsetMs;
  }

  advance(ms: number): void {
    this.current += ms;
  }

  stepWall(ms: number): void {
    this.wallOffsetMs += ms;
  }
}
