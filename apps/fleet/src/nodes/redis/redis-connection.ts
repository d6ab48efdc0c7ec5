import { Logger, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { StoreUnavailableError } from '../store-unavailable.error';

/**
 * The controller's one connection to the shared Redis. Commands fail at once while Redis is
 * unreachable (no offline queue), so requests get a clear 503 instead of hanging; the client
 * reconnects by itself. Losing and regaining Redis is one log line each.
 */
export class RedisConnection implements OnApplicationShutdown {
  readonly client: Redis;
  private readonly logger = new Logger('Redis');
  private available?: boolean;
  private closing = false;

  constructor(
    url: string,
    private readonly urlForLogs: string,
  ) {
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
    });
    this.client.on('ready', () => this.changed(true));
    this.client.on('error', (error: Error) => this.changed(false, error.message));
    this.client.on('close', () => this.changed(false, 'connection closed'));
  }

  /** Runs commands; any failure of the store becomes a StoreUnavailableError (503). */
  async run<T>(operation: (client: Redis) => Promise<T>): Promise<T> {
    if (this.client.status !== 'ready') {
      throw new StoreUnavailableError(
        `fleet state store (Redis at ${this.urlForLogs}) unavailable: not connected (${this.client.status})`,
      );
    }
    try {
      return await operation(this.client);
    } catch (error) {
      throw new StoreUnavailableError(
        `fleet state store (Redis at ${this.urlForLogs}) unavailable: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.client.quit().catch(() => this.client.disconnect());
  }

  private changed(available: boolean, reason?: string): void {
    if (this.closing || this.available === available) return;
    const before = this.available;
    this.available = available;
    if (available) {
      this.logger.log(
        `Redis at ${this.urlForLogs} ${before === false ? 'restored' : 'connected'}: fleet state is shared`,
      );
    } else {
      this.logger.warn(
        `Redis at ${this.urlForLogs} ${before === true ? 'lost' : 'unreachable'} (${reason}); state routes answer 503 until it is back`,
      );
    }
  }
}
