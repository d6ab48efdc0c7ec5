/**
 * Preloaded into the benchmarked controller (node -r): on SIGUSR2 it collects garbage and
 * writes the process's memory and the longest event-loop stall since the last probe to
 * $BENCH_PROBE_FILE. Nothing else about the controller changes.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();

process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const memory = process.memoryUsage();
  writeFileSync(
    process.env.BENCH_PROBE_FILE ?? '/dev/null',
    JSON.stringify({
      heapUsed: memory.heapUsed,
      rss: memory.rss,
      maxLoopDelayMs: loopDelay.max / 1e6,
    }),
  );
  loopDelay.reset();
});
