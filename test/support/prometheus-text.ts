/**
 * The value of one sample in Prometheus text exposition, e.g.
 * `ppn_fleet_heartbeats_total{outcome="joined"}`; undefined when the sample is not there.
 */
export function sampleValue(exposition: string, sample: string): number | undefined {
  for (const line of exposition.split('\n')) {
    if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1).split(' ')[0]);
  }
  return undefined;
}

/** Every metric family the exposition declares (its `# TYPE` lines), by name. */
export function metricTypes(exposition: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1], match[2]);
  return types;
}
