import { OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Clock } from '@app/daemon';
import { RedisConnection } from './redis-connection';

/** How often a controller re-reads Redis TIME. */
const CLOCK_SYNC_INTERVAL_MS = 1_000;

/**
 * Redis TIME as every controller on the same Redis sees it, so controllers whose own clocks
 * differ agree on receive times and on who is stale. Synced every second; between syncs it
 * runs on the local monotonic clock plus the measured offset, so a step of this machine's wall
 * clock moves nothing (Redis's own wall clock is the one every controller shares).
 */
export class RedisClock extends Clock implements OnApplicationShutdown {
  /** Until the first sync: this machine's wall clock. */
  private offsetMs = Date.now() - performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly redis: RedisConnection) {
    super();
    this.redis.client.on('ready', () => void this.sync());
    this.timer = setInterval(() => void this.sync(), CLOCK_SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  now(): number {
    return Math.floor(performance.now() + this.offsetMs);
  }

  /** Offset to Redis TIME, halving the round trip; kept as it was when Redis is down. */
  async sync(): Promise<void> {
    try {
      const sentAt = performance.now();
      const [seconds, micros] = await this.redis.client.time();
      const receivedAt = performance.now();
      this.offsetMs = Math.round(
        Number(seconds) * 1000 + Number(micros) / 1000 - (sentAt + receivedAt) / 2,
      );
    } catch {
      // Redis unreachable: RedisConnection says so; keep the last offset.
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
