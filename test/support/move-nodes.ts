import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, FLEET_URL, enrolled, eventually, getJson, startAgent } from './daemons';
import { guestImagePath } from './guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from './guest-ssh';
import { ppnFleet } from './ppn-fleet-cli';
import { liveQemusUnder } from './qemu-processes';

/**
 * Two agents a VM moves between, as test/system/vm-move.system-spec.ts sets them up: each on
 * its own loopback address (127.0.0.2, 127.0.0.3), so a moved VM keeps its host ports, each with
 * its own disk folder under `workDir` (its QEMU processes told apart by it).
 */
export interface MoveNode {
  id: string;
  wgIp: string;
  diskDir: string;
  spawnPort: string;
}

export interface ListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  accel?: string | null;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
}

export function moveNodes(workDir: string): { a: MoveNode; b: MoveNode } {
  const node = (id: 'a' | 'b'): MoveNode => ({
    id: `node-${id}`,
    wgIp: id === 'a' ? '127.0.0.2' : '127.0.0.3',
    diskDir: join(workDir, `${id}-disks`),
    spawnPort: id === 'a' ? '9234' : '9244',
  });
  return { a: node('a'), b: node('b') };
}

/** An SSH key pair for the guests, in `workDir`: the private key's path and the public key. */
export function guestKey(workDir: string): { key: string; pubkey: string } {
  const key = join(workDir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'move', '-f', key]);
  return { key, pubkey: readFileSync(`${key}.pub`, 'utf8').trim() };
}

/**
 * The node's agent, enrolled; `pubkey`: the guests' SSH key (none: no SSH into them); `env`:
 * more of its environment over the rest (VM_ACCEL=auto, a test-only VM_HOST_FAILPOINT).
 */
export function startMoveNode(
  which: MoveNode,
  pubkey: string | undefined,
  env: NodeJS.ProcessEnv = {},
): Promise<Daemon> {
  return enrolled(
    startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: which.id,
      VM_WG_IP: which.wgIp,
      VM_SPAWN_PORT: which.spawnPort,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: which.diskDir,
      VM_BASE_IMAGE: guestImagePath(),
      ...(pubkey === undefined ? {} : { VM_SSH_PUBKEY: pubkey }),
      VM_ACCEL: 'tcg',
      ...env,
    }),
  );
}

export async function listedOn(
  vmId: string,
  nodeId: string,
  state: string,
  withinMs = 300_000,
): Promise<ListedVm> {
  return eventually(
    `${vmId} listed ${state} on ${nodeId}`,
    async () =>
      (await getJson<ListedVm[]>('/v1/vms')).find(
        (vm) => vm.vm_id === vmId && vm.node_id === nodeId && vm.state === state,
      ),
    withinMs,
    500,
  );
}

/** The nodes the controller lists the VM on. */
export async function listedNodesOf(vmId: string): Promise<string[]> {
  return (await getJson<ListedVm[]>('/v1/vms'))
    .filter(({ vm_id }) => vm_id === vmId)
    .map(({ node_id }) => node_id);
}

/** What a node keeps of a VM: its disk, its run folder. */
export function leftOf(which: MoveNode, vmId: string): string[] {
  return [join(which.diskDir, 'disks', `${vmId}.qcow2`), join(which.diskDir, 'run', vmId)].filter(
    (path) => existsSync(path),
  );
}

/** How many live QEMU processes each node runs. */
export function qemusOn(...nodes: MoveNode[]): number[] {
  return nodes.map((which) => liveQemusUnder(which.diskDir).length);
}

/**
 * A VM of 512 MB created on `on`, its SSH port published, `command` run in it once SSH answers:
 * its id, SSH port and the command's output.
 */
export async function guestOn(
  on: MoveNode,
  key: string,
  command: string,
  extraArgs: string[] = [],
): Promise<{ vmId: string; sshPort: number; output: string; listed: ListedVm }> {
  const createdAt = Date.now();
  const created = await ppnFleet([
    'vm',
    'create',
    ...['--type', 'moved', '--ram', '512', '--vcpus', '1', '--node', on.id, '--json'],
    ...extraArgs,
  ]);
  if (created.code !== 0) throw new Error(`vm create exited ${created.code}: ${created.stderr}`);
  const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
  const listed = await listedOn(vmId, on.id, 'Running');
  const sshPort = listed.host_ports[0].host_port;
  const output = await sshOnceUp(key, on.wgIp, sshPort, command, {
    since: createdAt,
    deadlineMs: GUEST_SSH_DEADLINE_MS,
    serialLog: join(on.diskDir, 'run', vmId, 'serial.log'),
  });
  return { vmId, sshPort, output, listed };
}
