/**
 * `npm run bench`: the controller built and started as in production, loaded from separate
 * processes with autocannon, side by side with a node:http baseline; then the agent. Prints one
 * table and writes the same figures as JSON to test/bench/results/.
 * `npm run bench -- heartbeats`: heartbeat ingestion alone (in memory, the baseline, in Redis,
 * and enrolling 100,000 nodes), about 2 minutes.
 * `npm run bench -- console`: 20 console tabs on 1,000 simulated nodes alone, about a minute.
 * `npm run bench -- copies`: a real guest copied between two agents alone, a few minutes.
 * `npm run bench -- move`: a real guest moved live, then cold, between two agents alone (move.ts).
 * `npm run bench -- copy-age [--minutes 10]`: the age of 3 guests' copies alone (copy-age.ts).
 * `npm run bench -- etcd`: heartbeat ingestion in memory and in etcd (VM_FLEET_ETCD_ENDPOINTS, a
 * one-member etcd of the bench's own) side by side, about 40 s; also part of the other runs.
 * `npm run bench -- ingestion-cpu`: the controller's CPU per heartbeat beside the Nest floor's, in
 * process, both apps measuring at once (ingestion-cpu.ts), about a minute.
 * `npm run bench -- ha` and `-- ha-partitions`: issue 36's figures alone (ha.ts, root).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import * as ts from 'typescript';
import {
  Daemon,
  FLEET_URL,
  VM_HOST_MAIN,
  eventually,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestImagePath } from '../support/guest-image';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { EtcdServer, stopAllEtcdServers } from '../support/etcd-server';
import { removeScratchFolders } from '../support/scratch-folders';
import type { ConsoleTabsResult, ConsoleTabsSpec } from './console-tabs';
import type { HostileResult } from './hostile-bodies';
import type { LoadResult, LoadSpec } from './load';
import { measureBootTime } from './boot-time';
import { measureCopies } from './copies';
import { measureMoves } from './move';
import { copyAgeFigure, copyAgeMinutes, measureCopyAge } from './copy-age';
import { measureQemuMemory } from './qemu-memory';
import { recordHa, runPartitionTrials } from './ha';
import { measureIngestionCpu } from './ingestion-cpu';
import { spawnBenchScript } from './bench-script';

const RESULTS = join(__dirname, 'results');
const BASELINE_PORT = 9213;
const CONNECTIONS = 16;
const HEARTBEAT_SECONDS = 10;
const READ_SECONDS = 5;
const AGENT_SECONDS = 60;
/** Only the heartbeat ingestion steps: the reads, sweep, hostile bodies and agent are left out. */
const HEARTBEATS_ONLY = process.argv.slice(2).includes('heartbeats');
/** Only the console step: 20 tabs on 1,000 simulated nodes. */
const CONSOLE_ONLY = process.argv.slice(2).includes('console');
/** Only the copies step: a real guest copied between two agents. */
const COPIES_ONLY = process.argv.slice(2).includes('copies');
/** Only the moves: a real guest moved live, then cold, between two agents. */
const MOVE_ONLY = process.argv.slice(2).includes('move');
/** Only the age of 3 guests' copies, over `--minutes` (10). */
const COPY_AGE_ONLY = process.argv.slice(2).includes('copy-age');
/** Only heartbeat ingestion in memory and in etcd, side by side. */
const ETCD_ONLY = process.argv.slice(2).includes('etcd');
/** Only the CPU per heartbeat, the product's and the floor's (ingestion-cpu.ts). */
const INGESTION_CPU_ONLY = process.argv.slice(2).includes('ingestion-cpu');
const OPS_URL = 'http://127.0.0.1:9206';
/** Only issue 36's figures (ha.ts): a machine lost whole, etcd beside memory; the partitions. */
const HA_ONLY = process.argv.slice(2).includes('ha');
const HA_PARTITIONS_ONLY = process.argv.slice(2).includes('ha-partitions');

interface Probe {
  heapUsed: number;
  rss: number;
}

const figures: Record<string, unknown> = {};
const rows: Array<[string, string]> = [];

function record(key: string, label: string, value: unknown, shown: string): void {
  figures[key] = value;
  rows.push([label, shown]);
  console.log(`  ${label}: ${shown}`);
}

/** Runs a bench script in its own process and returns the JSON it prints. */
function runScript<T>(script: string, args: string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawnBenchScript(script, args);
    child.stdin.end();
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(output) as T) : reject(new Error(`${script} exited ${code}`)),
    );
  });
}

/** Runs one autocannon load in its own process. */
function load(spec: LoadSpec): Promise<LoadResult> {
  return runScript<LoadResult>('load.ts', [JSON.stringify(spec)]);
}

/** Enrolls `count` nodes as fast as the controller takes them, one heartbeat each. */
async function enroll(count: number): Promise<LoadResult> {
  return load({
    url: FLEET_URL,
    kind: 'heartbeat',
    path: '/v1/nodes/heartbeat',
    connections: CONNECTIONS,
    nodes: count,
    amount: count,
  });
}

function heartbeatLoad(url: string): Promise<LoadResult> {
  return load({
    url,
    kind: 'heartbeat',
    path: '/v1/nodes/heartbeat',
    connections: CONNECTIONS,
    nodes: 10_000,
    durationS: HEARTBEAT_SECONDS,
  });
}

/** A few seconds of the same load first, so what is measured is the server warm, not its JIT. */
async function warmUp(url: string): Promise<void> {
  await load({
    url,
    kind: 'heartbeat',
    path: '/v1/nodes/heartbeat',
    connections: CONNECTIONS,
    nodes: 10_000,
    durationS: 3,
  });
}

function checkClean(what: string, result: LoadResult): void {
  if (result.non2xx + result.errors + result.timeouts > 0) {
    console.log(
      `  WARNING ${what}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  }
}

/** GET /v1/nodes and /v1/fleet for a few seconds each, from 4 concurrent readers. */
async function measureReads(nodes: string, key: string): Promise<void> {
  for (const path of ['/v1/nodes', '/v1/fleet']) {
    const read = await load({
      url: FLEET_URL,
      kind: 'get',
      path,
      connections: 4,
      durationS: READ_SECONDS,
    });
    checkClean(path, read);
    record(
      `read${path.replace(/\//g, '.')}.${key}`,
      `GET ${path} at ${nodes} nodes req/s, p99, size`,
      read,
      `${fixed(read.perSecond)} req/s, ${read.p99Ms} ms, ${fixed(read.bytesPerResponse / 1024)} KiB`,
    );
  }
}

/** Reads at 10,000 nodes, then heartbeats while /v1/nodes is polled once a second. */
async function measureReadsWhileBeating(): Promise<void> {
  console.log('reads at 10,000 nodes');
  await measureReads('10,000', 'at10k');
  let pollP99 = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const t0 = performance.now();
      await fetch(`${FLEET_URL}/v1/nodes`).then((response) => response.arrayBuffer());
      pollP99 = Math.max(pollP99, performance.now() - t0);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const whilePolled = await heartbeatLoad(FLEET_URL);
  polling = false;
  await poller;
  checkClean('heartbeats while polled', whilePolled);
  record(
    'heartbeat.p99WhilePolledMs',
    'heartbeat p99 while /v1/nodes polled 1/s',
    whilePolled.p99Ms,
    `${whilePolled.p99Ms} ms (slowest poll ${fixed(pollP99)} ms)`,
  );
}

/** GET /v1/nodes at 10,000 nodes with fleet state in Redis. */
async function measureRedisRead(): Promise<void> {
  const redisRead = await load({
    url: FLEET_URL,
    kind: 'get',
    path: '/v1/nodes',
    connections: 4,
    durationS: READ_SECONDS,
  });
  checkClean('GET /v1/nodes via Redis', redisRead);
  record(
    'redis.read.v1.nodes.at10k',
    'Redis store: GET /v1/nodes at 10,000 nodes req/s, p99',
    redisRead,
    `${fixed(redisRead.perSecond)} req/s, ${redisRead.p99Ms} ms`,
  );
}

/**
 * Twenty console tabs polling a fleet of 1,000 simulated nodes (each an HTTP server answering
 * its life cycles, heartbeating every 10 s), in a process of their own: the heartbeats' p99
 * while they poll, and what the controller asked of the agents.
 */
async function measureConsoleTabs(probePath: string, probeFile: string): Promise<void> {
  console.log('the console: 20 tabs polling 1,000 simulated nodes (own process)');
  const fleet = await startController(probePath, probeFile);
  await fleet.waitForOutput(/operations listener on 127\.0\.0\.1:9206/);
  const spec: ConsoleTabsSpec = {
    fleetUrl: FLEET_URL,
    opsUrl: OPS_URL,
    nodes: 1_000,
    tabs: 20,
    warmUpS: 10,
    durationS: 30,
  };
  const tabs = await runScript<ConsoleTabsResult>('console-tabs.ts', [JSON.stringify(spec)]);
  await fleet.stop();
  record(
    'console.heartbeatLatencyMs',
    'heartbeat p50 / p99 / max, 20 tabs on 1,000 nodes (goal p99 <= 100 ms)',
    [tabs.heartbeatP50Ms, tabs.heartbeatP99Ms, tabs.heartbeatMaxMs],
    `${tabs.heartbeatP50Ms} / ${tabs.heartbeatP99Ms} / ${tabs.heartbeatMaxMs} ms (${tabs.heartbeats} beats, ${tabs.heartbeatsRefused} not 200; ${tabs.liveNodesAtEnd} of ${spec.nodes} nodes live at the end)`,
  );
  record(
    'console.agentCalls',
    '  agent calls/s, most at once',
    [tabs.agentCallsPerSecond, tabs.mostConcurrentAgentCalls],
    `${fixed(tabs.agentCallsPerSecond)}/s, ${tabs.mostConcurrentAgentCalls} at once`,
  );
  record(
    'console.pollP99Ms',
    '  overview polls p99',
    tabs.pollP99Ms,
    `${tabs.pollP99Ms} ms (${tabs.polls} polls, ${tabs.pollsFailed} failed)`,
  );
}

/** The memory probe, compiled to JS so the controller does not load TypeScript. */
function compileProbe(): string {
  const source = readFileSync(join(__dirname, 'memory-probe.ts'), 'utf8');
  const output = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  });
  const path = join(RESULTS, 'memory-probe.js');
  writeFileSync(path, output.outputText);
  return path;
}

async function probe(daemon: Daemon, file: string): Promise<Probe> {
  writeFileSync(file, '');
  daemon.process.kill('SIGUSR2');
  return eventually(
    'memory probe',
    () => {
      const text = readFileSync(file, 'utf8');
      return Promise.resolve(text ? (JSON.parse(text) as Probe) : undefined);
    },
    10_000,
    20,
  );
}

/** The controller's heap and RSS growth from `before` to `after`, per node of `nodes`. */
function recordGrowthPerNode(key: string, nodes: number, before: Probe, after: Probe): void {
  const heap = (after.heapUsed - before.heapUsed) / nodes;
  const rss = (after.rss - before.rss) / nodes;
  record(
    key,
    `controller heap / RSS per node at ${nodes.toLocaleString('en')} nodes`,
    [heap, rss],
    `${fixed(heap)} / ${fixed(rss)} B`,
  );
}

async function startController(
  probePath: string,
  probeFile: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Daemon> {
  const fleet = startFleetDaemon({ BENCH_PROBE_FILE: probeFile, ...env }, [
    '--expose-gc',
    '-r',
    probePath,
  ]);
  await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  return fleet;
}

function processStats(pid: number): { cpuTicks: number; rssKb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return { cpuTicks, rssKb };
}

const fixed = (value: number, digits = 0) => value.toFixed(digits);

/**
 * The built agent run as `node main.js`, without the Node options its installed command's
 * `#!/usr/bin/env -S node ...` line gives it (the Daemon helper applies them).
 */
function spawnPlainAgent(env: NodeJS.ProcessEnv): {
  process: ChildProcess;
  enrolled: Promise<void>;
} {
  const child = spawn(process.execPath, [VM_HOST_MAIN], {
    env: { PATH: process.env.PATH, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const enrolled = new Promise<void>((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('enrolled')) resolve();
    });
    child.once('exit', () => reject(new Error(`plain agent exited:\n${output}`)));
  });
  return { process: child, enrolled };
}

/** The staleness sweep, hostile bodies, the agent and, as root with the image, a real guest. */
async function measureSweepHostileAndAgent(
  probePath: string,
  probeFile: string,
  ticksPerSecond: number,
): Promise<void> {
  console.log('the staleness sweep: 100,000 nodes stale at once (in its own process)');
  const sweep = await runScript<{
    nodes: number;
    left: number;
    sweepMs: number;
    maxLoopStallMs: number;
  }>('sweep.ts', ['100000']);
  record(
    'sweep.ms',
    `one sweep dropping ${sweep.nodes - sweep.left} of ${sweep.nodes} nodes`,
    sweep.sweepMs,
    `${fixed(sweep.sweepMs, 1)} ms`,
  );
  record(
    'sweep.maxLoopStallMs',
    'longest event-loop stall during it',
    sweep.maxLoopStallMs,
    `${fixed(sweep.maxLoopStallMs, 1)} ms`,
  );

  console.log('hostile bodies: each answered while the event loop is watched (in its own process)');
  const hostile = await runScript<HostileResult[]>('hostile-bodies.ts', []);
  for (const result of hostile) {
    record(
      `hostile.${result.body}`,
      `${result.body} (${fixed(result.bytes / 1024)} KiB)`,
      result,
      `${result.status} in ${fixed(result.answerMs, 1)} ms (${result.answerBytes} B); longest stall ${fixed(result.maxStallMs, 1)} ms`,
    );
  }
  const worst = hostile.reduce((a, b) => (b.maxStallMs > a.maxStallMs ? b : a));
  record(
    'hostile.maxStallMs',
    'longest event-loop stall over every hostile body',
    worst.maxStallMs,
    `${fixed(worst.maxStallMs, 1)} ms (${worst.body})`,
  );

  console.log('the agent');
  const fleet = await startController(probePath, probeFile);
  const agentEnv = (id: string, ip: string, interval: string) => ({
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: id,
    VM_WG_IP: ip,
    VM_HEARTBEAT_INTERVAL_S: interval,
    VM_DISK_DIR: join(RESULTS, `disk-${id}`),
  });
  const startTimes: number[] = [];
  for (let run = 0; run < 3; run++) {
    const t0 = Date.now();
    const agent = new Daemon(VM_HOST_MAIN, agentEnv(`bench-start-${run}`, '127.0.0.2', '10'));
    await eventually(
      'agent listed',
      async () => ((await fetch(`${FLEET_URL}/v1/nodes/bench-start-${run}`)).ok ? true : undefined),
      10_000,
      10,
    );
    startTimes.push(Date.now() - t0);
    await agent.stop();
  }
  startTimes.sort((a, b) => a - b);
  record(
    'agent.startToListedMs',
    'agent start to listed (median of 3)',
    startTimes[1],
    `${startTimes[1]} ms`,
  );

  // Side by side over the same 60 s: the agent as installed (its command's Node options) at a
  // 1 s and at the 10 s default interval, the same agent at 10 s run as plain `node main.js`
  // (what the options save), and a bare `node` process (what any Node program costs here).
  const fast = new Daemon(VM_HOST_MAIN, agentEnv('bench-agent-1s', '127.0.0.3', '1'));
  const slow = new Daemon(VM_HOST_MAIN, agentEnv('bench-agent-10s', '127.0.0.4', '10'));
  const plain = spawnPlainAgent(agentEnv('bench-agent-plain', '127.0.0.5', '10'));
  const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 10_000)'], {
    stdio: 'ignore',
  });
  await fast.waitForOutput(/enrolled/);
  await slow.waitForOutput(/enrolled/);
  await plain.enrolled;
  await new Promise((resolve) => setTimeout(resolve, 3_000)); // past start-up, into the steady state
  const sampled = {
    fast: fast.process.pid!,
    slow: slow.process.pid!,
    plain: plain.process.pid!,
    bare: bare.pid!,
  };
  type Sampled = keyof typeof sampled;
  const names = Object.keys(sampled) as Sampled[];
  const first = Object.fromEntries(names.map((name) => [name, processStats(sampled[name])]));
  const firstAt = Date.now();
  const rss = Object.fromEntries(names.map((name) => [name, [] as number[]]));
  while (Date.now() - firstAt < AGENT_SECONDS * 1000) {
    for (const name of names) rss[name].push(processStats(sampled[name]).rssKb);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const elapsedS = (Date.now() - firstAt) / 1000;
  for (const [name, key, label] of [
    ['fast', 'agent.interval1s', 'agent at a 1 s interval'],
    ['slow', 'agent.interval10s', 'agent at a 10 s interval'],
    ['plain', 'agent.interval10sPlainNode', 'agent at 10 s as plain `node main.js`'],
    ['bare', 'baseline.bareNode', 'bare `node` process, idle'],
  ] as const) {
    const last = processStats(sampled[name]);
    const cpuPct = ((last.cpuTicks - first[name].cpuTicks) / ticksPerSecond / elapsedS) * 100;
    const maxRssMb = Math.max(...rss[name]) / 1024;
    record(
      key,
      `${label}: RSS max, CPU over ${AGENT_SECONDS} s`,
      { maxRssMb, cpuPct },
      `${fixed(maxRssMb, 1)} MB, ${fixed(cpuPct, 2)} % of a core`,
    );
  }
  bare.kill('SIGTERM');
  plain.process.kill('SIGTERM');
  await Promise.all([fast.stop(), slow.stop()]);

  // A real guest's QEMU against what the agent commits for it (needs root and the guest image).
  if (process.getuid?.() === 0 && existsSync(guestImagePath())) {
    for (const { accel, residentMb, committedMb, ratio } of await measureQemuMemory()) {
      record(
        `qemu.residentOverCommitted.${accel}`,
        `QEMU of a 512 MB guest under ${accel.toUpperCase()}: resident / committed (goal <= 1.1)`,
        { residentMb, committedMb, ratio },
        `${fixed(residentMb)} MB / ${committedMb} MB = ${fixed(ratio, 2)}`,
      );
    }
    // Create → SSH of a real guest under TCG, with its phases and the load it ran at.
    console.log('create → SSH, a 512 MB 1-vCPU guest under TCG');
    const boot = await measureBootTime();
    const ssh = boot.phases.find(({ phase }) => phase === 'SSH login');
    record(
      'boot.createToSshS',
      `create → SSH under ${boot.accel.toUpperCase()} (goal <= 20 s on 2 idle cores)`,
      boot,
      `${ssh?.atS.toFixed(1)} s (load ${boot.loadBefore} before, ${boot.loadAfter} after; QEMU's CPU time to the banner ${boot.qemuCpuS.toFixed(1)} s)`,
    );
    for (const { phase, atS } of boot.phases) {
      record(`boot.phase.${phase}`, `  ${phase}`, atS, `${atS.toFixed(1)} s`);
    }
    await recordCopies();
    await recordMoves();
    await recordCopyAge();
  } else {
    console.log('  QEMU memory and create → SSH: skipped (needs root and the guest image)');
  }
  await fleet.stop();
}

/** A real guest copied between two agents on loopback (needs root and the guest image). */
async function recordCopies(): Promise<void> {
  if (process.getuid?.() !== 0 || !existsSync(guestImagePath())) {
    console.log('  copies: skipped (needs root and the guest image)');
    return;
  }
  console.log('copies of a 512 MB guest between two agents on loopback, unlimited rate');
  const copies = await measureCopies();
  record(
    'copies.fullMBps',
    'full copy between two agents: MB/s',
    copies,
    `${fixed(copies.fullMBps, 1)} MB/s (${fixed(copies.fullBytes / 1e6, 1)} MB in ${fixed(copies.fullSeconds, 1)} s)`,
  );
  record(
    'copies.incrementalOverWritten',
    'incremental after 64 MiB of random writes: bytes sent / written (goal <= 1.25)',
    copies.incrementalOverWritten,
    `${fixed(copies.incrementalOverWritten, 2)} (${copies.incrementalBytes} bytes)`,
  );
  record(
    'copies.writeDuringOverWithout',
    "guest's writes during a full copy at the default 40 MB/s / without (goal >= 0.8)",
    copies.writeDuringOverWithout,
    `${fixed(copies.writeDuringOverWithout, 2)} (${fixed(copies.writeDuringMBps, 1)} / ${fixed(copies.writeWithoutMBps, 1)} MB/s)`,
  );
}

/** A real guest moved live, then cold, between two agents on loopback (needs root and the image). */
async function recordMoves(): Promise<void> {
  if (process.getuid?.() !== 0 || !existsSync(guestImagePath())) {
    console.log('  moves: skipped (needs root and the guest image)');
    return;
  }
  console.log('moves of an idle 512 MB guest between two agents on loopback');
  const moves = await measureMoves();
  const { live, cold } = moves;
  record('move.accel', 'move: the accelerator the guest ran under', moves.accel, moves.accel);
  record(
    'move.live',
    "live move: guest's pause (goal <= 1 s under TCG) / its own largest tick gap, total, bytes",
    live,
    `${live.pauseMs} ms / ${live.guestGapMs} ms, ${fixed(live.totalMs / 1000, 1)} s, ${fixed(live.bytesSent / 1e6, 1)} MB`,
  );
  record(
    'move.cold',
    'cold move: total, bytes',
    cold,
    `${fixed(cold.totalMs / 1000, 1)} s, ${fixed(cold.bytesSent / 1e6, 1)} MB`,
  );
  record(
    'move.uptime',
    'move: uptime before / after',
    moves,
    `${moves.uptimeBefore} / ${moves.uptimeAfter}`,
  );
}

/** The age of 3 guests' copies under TCG every 60 s (needs root and the guest image). */
async function recordCopyAge(): Promise<void> {
  const minutes = copyAgeMinutes();
  console.log(`the age of the copies of 3 guests on 2 nodes under TCG, ${minutes} min`);
  record(...copyAgeFigure(await measureCopyAge(minutes)));
}

async function main(): Promise<void> {
  mkdirSync(RESULTS, { recursive: true });
  const probePath = compileProbe();
  const probeFile = join(RESULTS, 'probe.json');
  const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
  const started = Date.now();
  const loadBefore = loadavg().map((load) => load.toFixed(2));

  if (INGESTION_CPU_ONLY) {
    const cpu = await measureIngestionCpu();
    record(
      'heartbeat.cpuUs',
      'CPU per heartbeat, product / Nest floor (in process, both at once)',
      cpu,
      `${fixed(cpu.productUs)} / ${fixed(cpu.floorUs)} µs (floor/product ${fixed(cpu.ratio, 2)}, median of the rounds), product's loop delay p99 ${fixed(cpu.productLoopDelayP99Ms, 1)} ms`,
    );
    return report(started, loadBefore);
  }
  if (CONSOLE_ONLY) {
    await measureConsoleTabs(probePath, probeFile);
    return report(started, loadBefore);
  }
  if (COPIES_ONLY) {
    await recordCopies();
    return report(started, loadBefore);
  }
  if (MOVE_ONLY) {
    await recordMoves();
    return report(started, loadBefore);
  }
  if (COPY_AGE_ONLY) {
    if (process.getuid?.() !== 0 || !existsSync(guestImagePath())) {
      throw new Error('copy-age needs root and the guest image');
    }
    await recordCopyAge();
    return report(started, loadBefore);
  }
  if (HA_ONLY || HA_PARTITIONS_ONLY) {
    await (HA_ONLY ? recordHa(record) : runPartitionTrials());
    return report(started, loadBefore);
  }
  if (ETCD_ONLY) {
    console.log('heartbeat ingestion in memory (10,000 node ids, 2 VMs each, 16 connections)');
    const inMemory = await startController(probePath, probeFile);
    await warmUp(FLEET_URL);
    const ours = await heartbeatLoad(FLEET_URL);
    checkClean('heartbeats', ours);
    record(
      'heartbeat.perSecond',
      'controller heartbeats/s (memory), p99',
      ours.perSecond,
      `${fixed(ours.perSecond)}, p99 ${ours.p99Ms} ms`,
    );
    await inMemory.stop();
    await measureEtcdHeartbeats(probePath, probeFile);
    return report(started, loadBefore);
  }
  console.log('heartbeat ingestion (10,000 node ids, 2 VMs each, 16 connections)');
  let fleet = await startController(probePath, probeFile);
  const empty = await probe(fleet, probeFile);
  await warmUp(FLEET_URL);
  const ours = await heartbeatLoad(FLEET_URL);
  checkClean('heartbeats', ours);
  record('heartbeat.perSecond', 'controller heartbeats/s', ours.perSecond, fixed(ours.perSecond));
  record(
    'heartbeat.latencyMs',
    'controller heartbeat p50 / p99 / max',
    [ours.p50Ms, ours.p99Ms, ours.maxMs],
    `${ours.p50Ms} / ${ours.p99Ms} / ${ours.maxMs} ms`,
  );
  record(
    'heartbeat.failures',
    'controller non-2xx / errors',
    [ours.non2xx, ours.errors + ours.timeouts],
    `${ours.non2xx} / ${ours.errors + ours.timeouts}`,
  );
  record(
    'heartbeat.capacityNodes',
    'capacity at the 10 s default interval',
    ours.perSecond * 10,
    `${fixed(ours.perSecond * 10)} nodes`,
  );

  recordGrowthPerNode('memory.perNodeAt10k', 10_000, empty, await probe(fleet, probeFile));

  if (!HEARTBEATS_ONLY) await measureReadsWhileBeating();
  await fleet.stop();

  console.log('baseline: node:http alone, same load');
  const baseline = spawn(
    process.execPath,
    [
      '-r',
      'ts-node/register/transpile-only',
      join(__dirname, 'baseline-server.ts'),
      String(BASELINE_PORT),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => baseline.stdout.once('data', resolve));
  await warmUp(`http://127.0.0.1:${BASELINE_PORT}`);
  const base = await heartbeatLoad(`http://127.0.0.1:${BASELINE_PORT}`);
  baseline.kill('SIGTERM');
  checkClean('baseline', base);
  record(
    'baseline.perSecond',
    'node:http baseline heartbeats/s',
    base.perSecond,
    `${fixed(base.perSecond)} (p99 ${base.p99Ms} ms)`,
  );
  record(
    'heartbeat.ratio',
    'ours / baseline',
    ours.perSecond / base.perSecond,
    fixed(ours.perSecond / base.perSecond, 2),
  );

  console.log('the same, with fleet state in Redis (VM_FLEET_REDIS_URL)');
  const redis = await RedisServer.start();
  fleet = await startController(probePath, probeFile, { VM_FLEET_REDIS_URL: redis.url });
  await warmUp(FLEET_URL);
  const viaRedis = await heartbeatLoad(FLEET_URL);
  checkClean('heartbeats via Redis', viaRedis);
  record(
    'redis.heartbeat',
    'Redis store: heartbeats/s, p99',
    viaRedis,
    `${fixed(viaRedis.perSecond)}, p99 ${viaRedis.p99Ms} ms`,
  );
  if (!HEARTBEATS_ONLY) await measureRedisRead();
  await fleet.stop();
  await redis.stop();
  await measureEtcdHeartbeats(probePath, probeFile);

  if (!HEARTBEATS_ONLY) {
    console.log('reads at 1,000 nodes');
    fleet = await startController(probePath, probeFile);
    await enroll(1_000);
    await measureReads('1,000', 'at1k');
    await fleet.stop();
    await measureConsoleTabs(probePath, probeFile);
  }

  console.log('memory at 100,000 nodes');
  fleet = await startController(probePath, probeFile);
  const before100k = await probe(fleet, probeFile);
  const enrolled = await enroll(100_000);
  checkClean('enrolling 100,000', enrolled);
  record(
    'enroll.perSecondTo100k',
    'enrolling 100,000 nodes (first heartbeats, 2 VMs each): per second, p99',
    enrolled,
    `${fixed(enrolled.perSecond)}, p99 ${enrolled.p99Ms} ms`,
  );
  recordGrowthPerNode('memory.perNodeAt100k', 100_000, before100k, await probe(fleet, probeFile));
  await fleet.stop();

  if (!HEARTBEATS_ONLY) await measureSweepHostileAndAgent(probePath, probeFile, ticksPerSecond);
  report(started, loadBefore);
}

/** Heartbeat ingestion with fleet state in a one-member etcd of the bench's own. */
async function measureEtcdHeartbeats(probePath: string, probeFile: string): Promise<void> {
  console.log('the same, with fleet state in etcd (VM_FLEET_ETCD_ENDPOINTS)');
  const etcd = await EtcdServer.start();
  const fleet = await startController(probePath, probeFile, {
    VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint,
  });
  await warmUp(FLEET_URL);
  const viaEtcd = await heartbeatLoad(FLEET_URL);
  checkClean('heartbeats via etcd', viaEtcd);
  record(
    'etcd.heartbeat',
    'etcd store: heartbeats/s, p99',
    viaEtcd,
    `${fixed(viaEtcd.perSecond)}, p99 ${viaEtcd.p99Ms} ms`,
  );
  await fleet.stop();
  await etcd.stop();
  removeScratchFolders();
}

/** The table of every figure, and the same as JSON in test/bench/results/. */
function report(started: number, loadBefore: string[]): void {
  // The machine's load average (1, 5, 15 min) before and after: its figures depend on it.
  const load = { before: loadBefore, after: loadavg().map((value) => value.toFixed(2)) };
  const file = join(RESULTS, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { machine: { cores: cpus().length, node: process.version, load }, figures },
      null,
      2,
    ),
  );
  const width = Math.max(...rows.map(([label]) => label.length));
  console.log('\n| figure | value |\n|---|---|');
  for (const [label, value] of rows) console.log(`| ${label.padEnd(width)} | ${value} |`);
  console.log(`\nload average ${load.before.join(' ')} before, ${load.after.join(' ')} after`);
  console.log(`\nfigures written to ${file} (${fixed((Date.now() - started) / 1000)} s)`);
}

main().catch(async (error: unknown) => {
  console.error(error);
  // No daemon or redis-server of a failed run outlives it.
  await Promise.all([stopAllDaemons(), stopAllRedisServers(), stopAllEtcdServers()]);
  removeScratchFolders();
  process.exit(1);
});
