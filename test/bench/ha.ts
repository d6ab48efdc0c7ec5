/**
 * `npm run bench -- ha`: issue 36's figures, each script under test/isolated.sh (they make
 * network namespaces and bind fixed ports): kill-to-SSH and the data lost when a machine dies
 * whole (ha-machine-loss.ts, a few minutes), and heartbeat ingestion in etcd mode side by side
 * with memory mode (etcd-side-by-side.ts, about a minute). Needs root and the guest image.
 * `npm run bench -- ha-partitions`: the partition spec's trials (HA_PARTITION_TRIALS, 10 unless
 * set), each printing its times, about 3 minutes a trial.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { SideBySideFigures } from './etcd-side-by-side';
import type { MachineLossFigures } from './ha-machine-loss';

const ROOT = join(__dirname, '../..');

/** `command` under test/isolated.sh, its stderr shown; resolves with its stdout. */
function isolated(
  command: string[],
  env: NodeJS.ProcessEnv = {},
  stdout: 'pipe' | 'inherit' = 'pipe',
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(ROOT, 'test/isolated.sh'), ...command], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', stdout, 'inherit'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command.join(' ')} exited ${code}`)),
    );
  });
}

function script<T>(file: string): Promise<T> {
  return isolated([
    ...[process.execPath, '-r', 'ts-node/register/transpile-only'],
    ...['-r', 'tsconfig-paths/register', join(__dirname, file)],
  ]).then((output) => JSON.parse(output.trim().split('\n').at(-1)!) as T);
}

export function measureMachineLoss(): Promise<MachineLossFigures> {
  return script<MachineLossFigures>('ha-machine-loss.ts');
}

export function measureEtcdSideBySide(): Promise<SideBySideFigures> {
  return script<SideBySideFigures>('etcd-side-by-side.ts');
}

/** The partition spec, its output shown (its `[ha]` lines carry the figures). */
export async function runPartitionTrials(): Promise<void> {
  await isolated(
    [
      ...[process.execPath, join(ROOT, 'node_modules/.bin/jest')],
      ...['test/system/ha-partitions.system-spec.ts', '--selectProjects', 'system', '--runInBand'],
    ],
    { HA_PARTITION_TRIALS: process.env.HA_PARTITION_TRIALS ?? '10' },
    'inherit',
  );
}

type Record = (key: string, label: string, value: unknown, shown: string) => void;

/** Both figures, one after the other (never at once: each would load the other's machine). */
export async function recordHa(record: Record): Promise<void> {
  console.log('a machine killed whole: three machines, a protected guest (issue 36)');
  const loss = await measureMachineLoss();
  record(
    'ha.machineLoss',
    'machine killed: to Running / to SSH on a survivor (goal 120 s), copy age used',
    loss,
    `${loss.killToRunningS.toFixed(1)} s / ${loss.killToSshS.toFixed(1)} s, copy age ${loss.copyAgeS} s` +
      ` (file kept: ${loss.sameFile}, overlaps ${loss.overlaps}, load ${loss.load.map((each) => each.toFixed(2)).join(' -> ')})`,
  );
  console.log('heartbeat ingestion, etcd mode beside memory mode, interleaved');
  const side = await measureEtcdSideBySide();
  record(
    'ha.etcdSideBySide',
    'heartbeats/s memory / etcd (interleaved), etcd over memory',
    side,
    `${side.memoryPerSecond.toFixed(0)} / ${side.etcdPerSecond.toFixed(0)}, ${side.etcdOverMemory.toFixed(2)}` +
      ` (p99 ${side.memoryP99Ms} / ${side.etcdP99Ms} ms, ${side.failures} failures, load ${side.load.map((each) => each.toFixed(2)).join(' -> ')})`,
  );
}
