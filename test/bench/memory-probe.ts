/**
 * Preloaded into the benchmarked controller (node -r): on SIGUSR2 it collects garbage and
 * writes the process's memory to $BENCH_PROBE_FILE. Nothing else about the controller changes.
 */
import { writeFileSync } from 'node:fs';

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
    }),
  );
});
