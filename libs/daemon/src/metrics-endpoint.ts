import { Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { ConfigurationError } from './environment';
import { ListenAddress, formatListenAddress } from './listen-address';

/** One scrape: the exposition text and its content type, as the metrics registry renders them. */
export interface Scrape {
  contentType: string;
  body: string;
}

/**
 * GET /metrics on a listener of its own, apart from the daemon's API (whose route table stays
 * as the contract has it): bound when the app starts, closed when it stops. Every other path is
 * a 404; nothing is read from a request but its method and path.
 */
export class MetricsEndpoint implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server?: Server;

  constructor(
    private readonly address: ListenAddress,
    /** The variable that set the address, named in a start-up error. */
    private readonly variable: string,
    private readonly scrape: () => Promise<Scrape>,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const server = createServer((request, response) => void this.answer(request, response));
    server.headersTimeout = 5_000;
    server.requestTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.address.port, this.address.host, () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((error: unknown) => {
      throw new ConfigurationError(
        `${this.variable} ${formatListenAddress(this.address)} cannot be bound: ${(error as Error).message}`,
      );
    });
    this.server = server;
    this.logger.log(`Prometheus metrics at http://${formatListenAddress(this.address)}/metrics`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    request.resume();
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics') return end(response, 404, 'not found\n');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('Allow', 'GET, HEAD');
      return end(response, 405, 'method not allowed\n');
    }
    try {
      const { contentType, body } = await this.scrape();
      response.setHeader('Content-Type', contentType);
      end(response, 200, request.method === 'HEAD' ? '' : body);
    } catch (error) {
      this.logger.error(`scrape failed: ${error instanceof Error ? error.message : String(error)}`);
      end(response, 500, 'scrape failed\n');
    }
  }
}

function end(response: ServerResponse, status: number, body: string): void {
  response.statusCode = status;
  if (!response.hasHeader('Content-Type')) response.setHeader('Content-Type', 'text/plain');
  response.end(body);
}
