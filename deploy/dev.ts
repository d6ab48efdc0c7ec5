/**
 * `npm start`: the controller plus one local agent in one process tree, so a newcomer sees a
 * node enroll. The agent's node id is this machine's hostname, its address 127.0.0.1.
 * Ctrl-C stops both. Runs the built daemons exactly as systemd would, only with a dev setup.
 *
 * Both daemons stop, and this waits for them, when this process gets SIGTERM, SIGINT or SIGHUP,
 * or when its parent goes: npm forwards SIGTERM and SIGINT to it (the start script `exec`s it,
 * so no shell stands between), but dies of a SIGHUP without forwarding it. Each daemon also gets
 * SIGTERM if this process dies without cleaning up (SIGKILL), through setpriv's --pdeathsig
 * where util-linux has it.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const FLEET_MAIN = join(ROOT, 'dist/apps/fleet/apps/fleet/src/main.js');
const VM_HOST_MAIN = join(ROOT, 'dist/apps/vm-host/apps/vm-host/src/main.js');
const FLEET_URL = 'http://127.0.0.1:9203';
/** How often the parent is looked for, and how long a daemon may take to stop before SIGKILL. */
const PARENT_CHECK_MS = 250;
const STOP_TIMEOUT_MS = 10_000;

/** `setpriv --pdeathsig TERM` when this machine has it (util-linux); else nothing. */
function deathSignalPrefix(): string[] {
  try {
    execFileSync('setpriv', ['--pdeathsig', 'TERM', 'true'], { stdio: 'ignore' });
    return ['setpriv', '--pdeathsig', 'TERM'];
  } catch {
    return [];
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A hostname that is also a valid node id. */
function nodeIdFromHostname(): string {
  const id = hostname()
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  return id || 'local-node';
}

async function controllerAnswers(deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${FLEET_URL}/v1/fleet`)).ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  let stopping = false;
  const parent = process.ppid;
  // npm dies of a SIGHUP without passing it on: this process is then orphaned.
  const parentWatch = setInterval(() => {
    if (isAlive(parent)) return;
    console.error(`dev: parent process ${parent} is gone; stopping both daemons`);
    stopAll(0);
  }, PARENT_CHECK_MS);
  const stopAll = (code: number): void => {
    if (stopping) return;
    stopping = true;
    clearInterval(parentWatch);
    const alive = children.filter((child) => child.exitCode === null && child.signalCode === null);
    if (alive.length === 0) process.exit(code);
    let left = alive.length;
    for (const child of alive) {
      const kill = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      child.once('exit', () => {
        clearTimeout(kill);
        left -= 1;
        if (left === 0) process.exit(code);
      });
      child.kill('SIGTERM');
    }
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      console.error(`dev: ${signal}; stopping both daemons`);
      stopAll(0);
    });
  }

  const prefix = deathSignalPrefix();
  const start = (main: string, env: NodeJS.ProcessEnv): ChildProcess => {
    const [command, ...args] = [...prefix, process.execPath, main];
    const child = spawn(command, args, { env, stdio: 'inherit' });
    children.push(child);
    child.on('exit', (code, signal) => {
      if (!stopping) {
        console.error(`dev: ${main} exited (${signal ?? code}); stopping the other daemon`);
        stopAll(code ?? 1);
      }
    });
    return child;
  };

  start(FLEET_MAIN, process.env);
  const answered = await controllerAnswers(Date.now() + 15_000);
  // Stopped meanwhile: no agent to start.
  if (stopping) return;
  if (!answered) {
    console.error(`dev: the controller did not answer on ${FLEET_URL} within 15 s`);
    stopAll(1);
    return;
  }

  const diskDir = process.env.VM_DISK_DIR ?? join(tmpdir(), 'ppn-fleet-dev', 'vm-disks');
  mkdirSync(diskDir, { recursive: true });
  const nodeId = nodeIdFromHostname();
  start(VM_HOST_MAIN, {
    ...process.env,
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: nodeId,
    VM_WG_IP: '127.0.0.1',
    VM_DISK_DIR: diskDir,
  });
  console.log(
    [
      '',
      `  Controller:  ${FLEET_URL}   (Swagger UI: http://localhost:9203/docs)`,
      `  Local agent: node ${nodeId} on 127.0.0.1:9204, VM disks in ${diskDir}`,
      `  Try:         curl -s http://localhost:9203/v1/nodes/${nodeId}`,
      '  Ctrl-C stops both.',
      '',
    ].join('\n'),
  );
}

void main();
