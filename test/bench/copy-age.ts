/**
 * The age of VMs' copies as an operator sees it, measured: the built controller and two built
 * agents (each its own loopback address), three 512 MB Debian guests (the guest image) under
 * TCG, two on one node and one on the other, each copied to the other node every 60 s
 * (`copies: {count: 1, every_s: 60}`) at the agents' defaults (VM_COPY_MAX_MBPS 40, heartbeats
 * every 10 s). Once each VM has its first copy, `GET /v1/vms` is read every second for the
 * window, and each VM's age is now - its `copied_at` (when its freshest copy on the other node
 * began, as that node's heartbeat reports it): the same age `ppn-fleet vms` shows and
 * ppn_fleet_vm_copy_age_seconds exports. Goal: p99 <= 90 s over 10 minutes. The guests idle
 * after their boot (what a booted Debian writes by itself). Prints p50 / p99 / max, the copies
 * taken and failed, and the load average over the window.
 *
 *   npm run build && ts-node -T -r tsconfig-paths/register test/bench/copy-age.ts [--minutes 10]
 * (as root, with the guest image built; `npm run bench -- copy-age [--minutes N]` runs it, and the
 * whole `npm run bench` too). BENCH_COPY_AGE_MINUTES sets the window as --minutes does. Prints
 * one JSON line.
 */
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  eventually,
  getJson,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestImagePath } from '../support/guest-image';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

export interface CopyAgeResult {
  minutes: number;
  vms: number;
  everyS: number;
  /** From the creates until each VM had its first copy listed. */
  warmUpSeconds: number;
  samples: number;
  /** Readings where a VM had no copy listed (counted at its last listed copy's age). */
  samplesWithoutCopy: number;
  p50Seconds: number;
  p99Seconds: number;
  maxSeconds: number;
  copiesTaken: { full: number; incremental: number };
  copiesFailed: number;
  /** 1, 5 and 15 min load averages when the window began and when it ended. */
  load: { atStart: number[]; atEnd: number[] };
}

const NODES = [
  { id: 'bench-age-a', ip: '127.0.0.55' },
  { id: 'bench-age-b', ip: '127.0.0.56' },
];
/** Two VMs on the first node, one on the second. */
const PLACED_ON = [NODES[0].id, NODES[1].id, NODES[0].id];
const EVERY_S = 60;
const DEFAULT_MINUTES = 10;
const MAX_MINUTES = 120;
const WARM_UP_MS = 20 * 60_000;

/** The window asked for: `--minutes N`, else BENCH_COPY_AGE_MINUTES, else 10. */
export function copyAgeMinutes(argv = process.argv, env = process.env): number {
  const at = argv.indexOf('--minutes');
  const given = at >= 0 ? argv[at + 1] : env.BENCH_COPY_AGE_MINUTES;
  if (given === undefined) return DEFAULT_MINUTES;
  const minutes = Number(given);
  if (!Number.isFinite(minutes) || minutes <= 0 || minutes > MAX_MINUTES) {
    throw new Error(`--minutes: a number of minutes above 0 and at most ${MAX_MINUTES}`);
  }
  return minutes;
}

/** The nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

interface ListedVm {
  vm_id: string;
  state: string;
  copied_at?: string | null;
}

/**
 * `progress` gets a line when the window begins (stderr by default: stdout is the JSON line).
 */
export async function measureCopyAge(
  minutes: number,
  progress: (line: string) => void = (line) => console.error(line),
): Promise<CopyAgeResult> {
  const workDir = scratchFolder('bench-copy-age-');
  const agents: Daemon[] = [];
  try {
    const fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    for (const node of NODES) {
      agents.push(
        startAgent({
          VM_FLEET_ENDPOINT: FLEET_URL,
          VM_NODE_ID: node.id,
          VM_WG_IP: node.ip,
          VM_DISK_DIR: join(workDir, node.id),
          VM_DISK_RETENTION_S: '0',
          VM_BASE_IMAGE: guestImagePath(),
          VM_ACCEL: 'tcg',
        }),
      );
    }
    await Promise.all(agents.map((agent) => agent.waitForOutput(/ enrolled: /)));
    const createdAt = Date.now();
    const vmIds: string[] = [];
    for (const node of PLACED_ON) {
      const response = await fetch(`${FLEET_URL}/v1/vms`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          vm_type: 'age',
          ram_mb: 512,
          vcpu_count: 1,
          preferred_node: node,
          copies: { count: 1, every_s: EVERY_S },
        }),
      });
      if (response.status !== 201) throw new Error(`create answered ${response.status}`);
      vmIds.push(((await response.json()) as { vm_id: string }).vm_id);
    }
    const listedCopies = async (): Promise<Map<string, number>> => {
      const copied = new Map<string, number>();
      for (const vm of await getJson<ListedVm[]>('/v1/vms')) {
        if (vmIds.includes(vm.vm_id) && vm.copied_at) {
          copied.set(vm.vm_id, Date.parse(vm.copied_at));
        }
      }
      return copied;
    };
    await eventually(
      'a first copy of every VM listed',
      async () => ((await listedCopies()).size === vmIds.length ? true : undefined),
      WARM_UP_MS,
      1_000,
    );
    const warmUpSeconds = (Date.now() - createdAt) / 1000;
    progress(
      `  a first copy of each VM listed ${warmUpSeconds.toFixed(0)} s after the creates; measuring for ${minutes} min`,
    );
    const logFrom = agents.map((agent) => agent.output.length);

    const atStart = loadavg();
    const ages: number[] = [];
    const lastCopied = await listedCopies();
    let samplesWithoutCopy = 0;
    const end = Date.now() + minutes * 60_000;
    // One reading a second, on the second: the listing as an operator's `ppn-fleet vms` reads it.
    for (let next = Date.now(); next < end; next += 1_000) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
      const now = Date.now();
      const copied = await listedCopies();
      for (const vmId of vmIds) {
        const at = copied.get(vmId);
        if (at === undefined) samplesWithoutCopy += 1;
        else lastCopied.set(vmId, at);
        ages.push(Math.max(0, now - lastCopied.get(vmId)!) / 1000);
      }
    }
    const atEnd = loadavg();

    const window = agents.map((agent, index) => agent.output.slice(logFrom[index])).join('\n');
    const count = (pattern: RegExp): number => window.match(pattern)?.length ?? 0;
    const sorted = [...ages].sort((a, b) => a - b);
    return {
      minutes,
      vms: vmIds.length,
      everyS: EVERY_S,
      warmUpSeconds,
      samples: sorted.length,
      samplesWithoutCopy,
      p50Seconds: percentile(sorted, 50),
      p99Seconds: percentile(sorted, 99),
      maxSeconds: sorted[sorted.length - 1],
      copiesTaken: {
        full: count(/: copy to node \S+ taken: full,/g),
        incremental: count(/: copy to node \S+ taken: incremental,/g),
      },
      copiesFailed: count(/: copy to node \S+ failed: /g),
      load: { atStart, atEnd },
    };
  } finally {
    await stopAllDaemons();
    killQemusUnder(workDir);
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The figure as `npm run bench` records it: key, label, value, what its table shows. */
export function copyAgeFigure(result: CopyAgeResult): [string, string, unknown, string] {
  const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(' ');
  const seconds = (value: number) => `${value.toFixed(1)} s`;
  return [
    'copies.ageSeconds',
    `copy age, ${result.vms} VMs on 2 nodes, TCG, every ${result.everyS} s, ${result.minutes} min: p50 / p99 / max (goal p99 <= 90 s)`,
    result,
    `${seconds(result.p50Seconds)} / ${seconds(result.p99Seconds)} / ${seconds(result.maxSeconds)}` +
      ` (${result.samples} readings; ${result.copiesTaken.full} full, ${result.copiesTaken.incremental} incremental, ${result.copiesFailed} failed copies;` +
      ` load ${load(result.load.atStart)} at start, ${load(result.load.atEnd)} at end)`,
  ];
}

if (require.main === module) {
  measureCopyAge(copyAgeMinutes()).then(
    (result) => console.log(JSON.stringify(result)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
