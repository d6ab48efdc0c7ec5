import { Logger, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { performance } from 'node:perf_hooks';
import { StoreUnavailableError } from '../store-unavailable.error';
import { RedisErrorMeaning, describeRedisError, secretsOf } from './redis-refusal';

/** A refusal met by a command (READONLY) is logged again after this long, not at every request. */
const COMMAND_REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * The controller's one connection to the shared Redis. Commands fail at once while Redis is
 * unreachable (no offline queue), so requests get a clear 503 instead of hanging; the client
 * reconnects by itself. Losing and regaining Redis is one log line each. A Redis that answers
 * but refuses (protected mode, a password missing or wrong, a read-only replica) is named as
 * such in the log line and in every 503, with its own reason.
 */
export class RedisConnection implements OnApplicationShutdown {
  readonly client: Redis;
  private readonly logger = new Logger('Redis');
  /** The URL's password: never in a log line or a 503, even should Redis quote it. */
  private readonly secrets: string[];
  private available?: boolean;
  /** Why Redis refused the connection, until it is ready again. */
  private refusal?: RedisErrorMeaning;
  /** When each refusal met by a command was last logged (performance.now()). */
  private readonly commandRefusalsLoggedAt = new Map<string, number>();
  private closing = false;
  /** Whether Redis was checked for commands without credentials (once, at the first connection). */
  private openChecked = false;

  constructor(
    private readonly url: string,
    private readonly urlForLogs: string,
  ) {
    this.secrets = secretsOf(url);
    this.client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
      // Protected mode answers DENIED as soon as it accepts; the client's CLIENT SETINFO, sent
      // first, would swallow that answer, and all that showed was "connection closed".
      disableClientInfo: true,
    });
    this.client.on('ready', () => {
      this.refusal = undefined;
      this.changed(true);
      if (!this.openChecked) {
        this.openChecked = true;
        void this.warnIfOpen();
      }
    });
    this.client.on('error', (error: Error) => this.failed(error));
    this.client.on('close', () => this.changed(false, this.refusal?.text ?? 'connection closed'));
  }

  /** Runs commands; any failure of the store becomes a StoreUnavailableError (503). */
  async run<T>(operation: (client: Redis) => Promise<T>): Promise<T> {
    if (this.client.status !== 'ready') {
      throw this.unavailable(this.refusal?.text ?? `not connected (${this.client.status})`);
    }
    try {
      return await operation(this.client);
    } catch (error) {
      const meaning = describeRedisError(error, this.secrets);
      if (meaning.refusal) this.logCommandRefusal(meaning);
      throw this.unavailable(meaning.text);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    await this.client.quit().catch(() => this.client.disconnect());
  }

  /**
   * Warns when Redis runs commands for a client that gives no credentials: whoever reaches it
   * reads and rewrites every node's record and VM, bypassing the API token (a tenant's VM did, on
   * a node whose guests reached its loopback). With credentials in the URL, a second connection
   * without them tells whether Redis requires them.
   */
  private async warnIfOpen(): Promise<void> {
    const withoutCredentials = new URL(this.url);
    const hadCredentials = withoutCredentials.username !== '' || withoutCredentials.password !== '';
    let open = !hadCredentials;
    if (hadCredentials) {
      withoutCredentials.username = '';
      withoutCredentials.password = '';
      const probe = new Redis(withoutCredentials.toString(), {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: 2_000,
        retryStrategy: () => null,
        enableReadyCheck: false,
        disableClientInfo: true,
      });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        open = (await probe.ping()) === 'PONG';
      } catch {
        open = false;
      } finally {
        probe.disconnect();
      }
    }
    if (!open || this.closing) return;
    this.logger.warn(
      `Redis at ${this.urlForLogs} runs commands without credentials: anyone who reaches it reads and rewrites the fleet's state (nodes, their spawn ports, every VM), bypassing VM_FLEET_API_TOKEN. Require a password or an ACL user in Redis (requirepass, or ACL SETUSER) and give it in VM_FLEET_REDIS_URL (rediss://user:password@host:6379/0); docs/operating.md`,
    );
  }

  private unavailable(reason: string): StoreUnavailableError {
    return new StoreUnavailableError(
      `fleet state store (Redis at ${this.urlForLogs}) unavailable: ${reason}`,
    );
  }

  /**
   * A connection error: a refusal is kept for the 503s until Redis is ready again, and logged
   * when it comes after the line that said the connection was lost (or is another refusal).
   */
  private failed(error: Error): void {
    const meaning = describeRedisError(error, this.secrets);
    if (meaning.refusal) {
      const known = this.refusal?.refusal === meaning.refusal;
      this.refusal = meaning;
      if (!known && this.available === false && !this.closing) {
        this.logger.warn(
          `Redis at ${this.urlForLogs} ${meaning.text}; state routes answer 503 until it is fixed`,
        );
      }
    }
    this.changed(false, meaning.text);
  }

  private logCommandRefusal(meaning: RedisErrorMeaning): void {
    const now = performance.now();
    const loggedAt = this.commandRefusalsLoggedAt.get(meaning.refusal!);
    if (loggedAt !== undefined && now - loggedAt < COMMAND_REFUSAL_LOG_INTERVAL_MS) return;
    this.commandRefusalsLoggedAt.set(meaning.refusal!, now);
    this.logger.warn(
      `Redis at ${this.urlForLogs} ${meaning.text}; state routes that write answer 503 until it is fixed`,
    );
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
