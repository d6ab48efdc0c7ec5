import type * as Prometheus from 'prom-client';

/**
 * Gauges of prom-client's defaults whose `_total` suffix promtool refuses (only counters may
 * have it); the same counts stay, by type, in nodejs_active_handles/requests/resources.
 */
const MISNAMED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * prom-client's default process metrics (CPU, memory, event loop lag, GC, ...) in `registry`,
 * less the misnamed ones, so that `promtool check metrics` passes.
 */
/**
 * Observes how long `work` takes in `histogram`, labelled with how it settled; resolves or
 * rejects as `work` does. Without a histogram (metrics off), `work` itself.
 */
export async function timeSettled<T>(
  histogram: Prometheus.Histogram<'outcome'> | undefined,
  work: Promise<T>,
  outcomes: { resolved: string; rejected: string },
): Promise<T> {
  if (!histogram) return work;
  const stop = histogram.startTimer();
  try {
    const result = await work;
    stop({ outcome: outcomes.resolved });
    return result;
  } catch (error) {
    stop({ outcome: outcomes.rejected });
    throw error;
  }
}

export function registerProcessMetrics(
  prometheus: typeof Prometheus,
  registry: Prometheus.Registry,
): void {
  prometheus.collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
}
