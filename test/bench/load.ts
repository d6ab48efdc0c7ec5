/**
 * The load generator, run as its own process so it does not share an event loop with what it
 * measures. Reads a LoadSpec as JSON from argv[2], prints the autocannon figures as JSON.
 */
import autocannon from 'autocannon';
import { heartbeatStream } from './heartbeat-bodies';

export interface LoadSpec {
  url: string;
  kind: 'heartbeat' | 'get';
  path: string;
  connections: number;
  durationS?: number;
  /** For heartbeats: how many distinct node ids to cycle through. */
  nodes?: number;
  /** Stop after this many requests instead of a duration. */
  amount?: number;
}

export interface LoadResult {
  requests: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  bytesPerResponse: number;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]) as LoadSpec;
  const next = spec.kind === 'heartbeat' ? heartbeatStream(spec.nodes ?? 1) : undefined;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationS ?? 10,
    amount: spec.amount,
    timeout: 10,
    requests: [
      next
        ? {
            method: 'POST',
            path: spec.path,
            headers: { 'content-type': 'application/json' },
            setupRequest: (request) => ({ ...request, body: next() }),
          }
        : { method: 'GET', path: spec.path },
    ],
  });
  const output: LoadResult = {
    requests: result.requests.total,
    perSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    bytesPerResponse:
      result.requests.total > 0 ? Math.round(result.throughput.total / result.requests.total) : 0,
  };
  process.stdout.write(JSON.stringify(output));
}

void main();
