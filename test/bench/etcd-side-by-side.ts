/**
 * Heartbeat ingestion in etcd mode side by side with memory mode: two built controllers at
 * once, each in a network namespace of its own (both on port 9203), the second with its state
 * in a one-member etcd; the same autocannon load (load.ts: 10,000 node ids, 16 connections)
 * given to each in turn, ROUNDS times, alternating which goes first, so both see the same
 * machine load. Prints, as one JSON line, heartbeats/s each (all rounds' requests over their
 * seconds) and etcd's over memory's.
 *
 *   npm run build && bash test/isolated.sh node -r ts-node/register/transpile-only \
 *     -r tsconfig-paths/register test/bench/etcd-side-by-side.ts
 * (as root; `npm run bench -- ha` runs it).
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Daemon, FLEET_MAIN, stopAllDaemons } from '../support/daemons';
import { EtcdServer, stopAllEtcdServers } from '../support/etcd-server';
import { TestHost } from '../support/netns';
import { removeScratchFolders } from '../support/scratch-folders';
import { endTestRun, startTestRun } from '../support/test-run';
import type { LoadResult, LoadSpec } from './load';

const ROUNDS = 3;
const SECONDS = 5;

export interface SideBySideFigures {
  memoryPerSecond: number;
  etcdPerSecond: number;
  etcdOverMemory: number;
  memoryP99Ms: number;
  etcdP99Ms: number;
  failures: number;
  rounds: number;
  seconds: number;
  load: [number, number];
}

function load(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', join(__dirname, 'load.ts'), JSON.stringify(spec)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(output) as LoadResult) : reject(new Error(`load ${code}`)),
    );
  });
}

const beats = (host: TestHost, durationS: number): Promise<LoadResult> =>
  load({
    url: `http://${host.address}:9203`,
    kind: 'heartbeat',
    path: '/v1/nodes/heartbeat',
    connections: 16,
    nodes: 10_000,
    durationS,
  });

async function main(): Promise<void> {
  startTestRun();
  const hosts: TestHost[] = [];
  try {
    const memoryHost = TestHost.create('ppn-bsm', 91);
    const etcdHost = TestHost.create('ppn-bse', 92);
    hosts.push(memoryHost, etcdHost);
    const etcd = await EtcdServer.start([etcdHost.hostAddress]);
    const controllers = [
      new Daemon(FLEET_MAIN, {}, [], [], memoryHost.name),
      new Daemon(
        FLEET_MAIN,
        { VM_FLEET_ETCD_ENDPOINTS: `http://${etcdHost.hostAddress}:${etcd.port}` },
        [],
        [],
        etcdHost.name,
      ),
    ];
    await Promise.all(
      controllers.map((daemon) => daemon.waitForOutput(/listening on 0\.0\.0\.0:9203/, 60_000)),
    );
    const loadBefore = loadavg()[0];
    // Warm: the JIT and every node id enrolled in both.
    for (const host of hosts) await beats(host, 3);
    const runs: Record<'memory' | 'etcd', LoadResult[]> = { memory: [], etcd: [] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['memory', 'etcd'] as const) : (['etcd', 'memory'] as const);
      for (const mode of order) {
        runs[mode].push(await beats(mode === 'memory' ? memoryHost : etcdHost, SECONDS));
      }
    }
    const perSecond = (results: LoadResult[]) =>
      results.reduce((sum, each) => sum + each.requests, 0) / (results.length * SECONDS);
    const worstP99 = (results: LoadResult[]) => Math.max(...results.map((each) => each.p99Ms));
    const all = [...runs.memory, ...runs.etcd];
    const figures: SideBySideFigures = {
      memoryPerSecond: perSecond(runs.memory),
      etcdPerSecond: perSecond(runs.etcd),
      etcdOverMemory: perSecond(runs.etcd) / perSecond(runs.memory),
      memoryP99Ms: worstP99(runs.memory),
      etcdP99Ms: worstP99(runs.etcd),
      failures: all.reduce((sum, each) => sum + each.non2xx + each.errors + each.timeouts, 0),
      rounds: ROUNDS,
      seconds: SECONDS,
      load: [loadBefore, loadavg()[0]],
    };
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    await stopAllDaemons();
    await stopAllEtcdServers();
    for (const host of hosts) host.remove();
    removeScratchFolders();
    await endTestRun();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
