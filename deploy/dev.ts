/**
 * `npm start`: the controller plus one local agent in one process tree, so a newcomer sees a
 * node enroll. The agent's node id is this machine's hostname, its address 127.0.0.1.
 * Ctrl-C stops both. Runs the built daemons exactly as systemd would, only with a dev setup.
 * The agent's VMs boot the newest Debian image of deploy/images/build-debian-image.sh in its
 * default folder, with this user's SSH key; else blank disks. It says which.
 *
 * Both daemons stop, and this waits for them, when this process gets SIGTERM, SIGINT or SIGHUP,
 * or when its parent goes: npm forwards SIGTERM and SIGINT to it (the start script `exec`s it,
 * so no shell stands between), but dies of a SIGHUP without forwarding it. Each daemon also gets
 * SIGTERM if this process dies without cleaning up (SIGKILL), through setpriv's --pdeathsig
 * where util-linux has it.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir, hostname, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const FLEET_MAIN = join(ROOT, 'dist/apps/fleet/apps/fleet/src/main.js');
const VM_HOST_MAIN = join(ROOT, 'dist/apps/vm-host/apps/vm-host/src/main.js');
const FLEET_URL = 'http://127.0.0.1:9203';
/** How often the parent is looked for, and how long a daemon may take to stop before SIGKILL. */
const PARENT_CHECK_MS = 250;
const STOP_TIMEOUT_MS = 10_000;
/**
 * Where deploy/images/build-debian-image.sh puts its Debian images unless told otherwise, a new
 * debian-<suite>-<YYYYMMDD-HHMMSS>.qcow2 each time.
 */
const IMAGES_DIR = '/var/lib/vm-fleet-images';
const DEBIAN_IMAGE_NAME = /^debian-.*\.qcow2$/;
/** `sudo ` unless root already (a root-only machine may have no sudo). */
const AS_ROOT = process.getuid?.() === 0 ? '' : 'sudo ';
/** The image readable by this user, who runs the agent here. */
const BUILD_IMAGE = `${AS_ROOT}deploy/images/build-debian-image.sh --owner ${userInfo().username}`;
/** What the agent takes as VM_SSH_PUBKEY (apps/vm-host/src/config/vm-host.config.ts). */
const SSH_PUBKEY_LINE = /^(ssh|ecdsa-sha2)-[A-Za-z0-9-]+ [A-Za-z0-9+/=]+( [^\n]*)?$/;

/**
 * The local agent's VM_DISK_DIR unless set: a folder of this checkout's own under `tmp`
 * (`ppn-fleet-dev-<12 hex digits of sha256(user id:checkout path)>/vm-disks`), so two checkouts,
 * or two users, never share VMs' disks and sidecars. Under /tmp it is gone after a reboot.
 */
function devDiskDir(root: string, tmp: string, uid = process.getuid?.() ?? 0): string {
  const hash = createHash('sha256').update(`${uid}:${root}`).digest('hex').slice(0, 12);
  return join(tmp, `ppn-fleet-dev-${hash}`, 'vm-disks');
}

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

/**
 * The builder's newest image in its default folder, if any: the last written (by mtime, so also
 * one copied there or built with another --suite), the later name on a tie.
 */
function newestDebianImage(): string | undefined {
  try {
    return readdirSync(IMAGES_DIR)
      .filter((name) => DEBIAN_IMAGE_NAME.test(name))
      .map((name) => join(IMAGES_DIR, name))
      .map((path) => ({ path, written: statSync(path).mtimeMs }))
      .sort((a, b) => b.written - a.written || (b.path > a.path ? 1 : -1))[0]?.path;
  } catch {
    return undefined;
  }
}

/**
 * The local agent's base image: VM_BASE_IMAGE when set, else the builder's newest Debian image
 * when this user can read it, else none (the agent makes a blank disk that boots nothing); and a
 * line saying which.
 */
function baseImage(): { env: NodeJS.ProcessEnv; says: string } {
  if (process.env.VM_BASE_IMAGE) {
    return { env: {}, says: `${process.env.VM_BASE_IMAGE} (VM_BASE_IMAGE)` };
  }
  const image = newestDebianImage();
  if (!image) {
    return {
      env: {},
      says: `none, blank disks that boot nothing; for a Debian guest: ${BUILD_IMAGE}, then npm start again`,
    };
  }
  try {
    accessSync(image, constants.R_OK);
    return {
      env: { VM_BASE_IMAGE: image },
      says: `${image}: Debian; ssh -p <host_port> debian@127.0.0.1`,
    };
  } catch {
    return {
      env: {},
      says: `none, blank disks that boot nothing; ${image} is not readable by this user (sudo chown $USER ${image}, or: ${BUILD_IMAGE})`,
    };
  }
}

/** VM_SSH_PUBKEY when set, else this user's first SSH public key the agent takes, if any. */
function sshPubkey(): { env: NodeJS.ProcessEnv; says: string } {
  if (process.env.VM_SSH_PUBKEY) return { env: {}, says: 'VM_SSH_PUBKEY' };
  for (const name of ['id_ed25519.pub', 'id_ecdsa.pub', 'id_rsa.pub']) {
    const file = join(homedir(), '.ssh', name);
    try {
      const key = readFileSync(file, 'utf8').split('\n')[0].trim();
      if (SSH_PUBKEY_LINE.test(key)) return { env: { VM_SSH_PUBKEY: key }, says: file };
    } catch {
      // no such key
    }
  }
  return { env: {}, says: 'none (set VM_SSH_PUBKEY, or make one: ssh-keygen -t ed25519)' };
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

  const diskDir = process.env.VM_DISK_DIR ?? devDiskDir(ROOT, tmpdir());
  mkdirSync(diskDir, { recursive: true });
  const nodeId = nodeIdFromHostname();
  const image = baseImage();
  const key = sshPubkey();
  start(VM_HOST_MAIN, {
    ...process.env,
    ...image.env,
    ...key.env,
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: nodeId,
    VM_WG_IP: '127.0.0.1',
    VM_DISK_DIR: diskDir,
  });
  console.log(
    [
      '',
      `  Controller:  ${FLEET_URL}   (Swagger UI: http://localhost:9203/docs)`,
      '  Operations:  http://127.0.0.1:9206   (Swagger UI: /docs; ppn-fleet vm stop|start|restart|console <vm_id>)',
      `  Local agent: node ${nodeId} on 127.0.0.1:9204`,
      `  VM disks:    ${diskDir}${process.env.VM_DISK_DIR ? ' (VM_DISK_DIR)' : ", this checkout's own (VM_DISK_DIR to choose)"}`,
      `  Base image:  ${image.says}`,
      `  SSH key:     ${key.says}`,
      `  Try:         curl -s http://localhost:9203/v1/nodes/${nodeId}`,
      '  Ctrl-C stops both.',
      '',
    ].join('\n'),
  );
}

void main();
