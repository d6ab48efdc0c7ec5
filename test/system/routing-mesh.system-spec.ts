import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  VM_HOST_MAIN,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from '../support/guest-ssh';
import { NodeMesh, emptied } from '../support/node-mesh';
import type { TestHost } from '../support/netns';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * One address per published service (the routing mesh), with the built daemons and the Debian
 * guest under TCG: two agents, each on a host of its own (a network namespace, its VM_WG_IP).
 * A VM on node A is reached at node B's address and the VM's SSH port (node B's mesh forwards
 * to A); moved live to node B (the existing move route), it is reached at the same URL, and at
 * node A's address too (A's mesh now forwards to B); node A then killed whole, the URL the
 * office used still answers. Each time the same guest (its boot id).
 */
jest.setTimeout(GUEST_SSH_DEADLINE_MS + 300_000);

const workDir = scratchFolder('routing-mesh-');
const key = join(workDir, 'id_ed25519');
const NODE_A = 'mesh-node-a';
const NODE_B = 'mesh-node-b';
const WAIT_MS = 240_000;
/** How long a guest may take to answer SSH again after a move (a TCG guest, a loaded machine). */
const SSH_AFTER_MOVE_MS = 60_000;

interface ListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
}

async function listedOn(vmId: string, nodeId: string): Promise<ListedVm> {
  return eventually(
    `${vmId} listed Running on ${nodeId}`,
    async () =>
      (await getJson<ListedVm[]>('/v1/vms')).find(
        (vm) => vm.vm_id === vmId && vm.node_id === nodeId && vm.state === 'Running',
      ),
    WAIT_MS,
    500,
  );
}

describe('the routing mesh: a published port at any node’s address, through a move and a dead node', () => {
  let mesh: NodeMesh;
  let hostA: TestHost;
  let hostB: TestHost;
  let agentA: Daemon;
  let agentB: Daemon;
  let pubkey: string;

  function startNodeAgent(host: TestHost, nodeId: string): Promise<Daemon> {
    return enrolled(
      new Daemon(
        VM_HOST_MAIN,
        {
          VM_FLEET_ENDPOINT: `http://${host.hostAddress}:9203`,
          VM_NODE_ID: nodeId,
          VM_WG_IP: host.address,
          VM_HEARTBEAT_INTERVAL_S: '1',
          VM_DISK_DIR: join(workDir, nodeId),
          VM_BASE_IMAGE: guestImagePath(),
          VM_SSH_PUBKEY: pubkey,
          VM_ACCEL: 'tcg',
        },
        [],
        [],
        host.name,
      ),
    );
  }

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'mesh-test', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    mesh = NodeMesh.create(['ppn-mesh-a', 'ppn-mesh-b'], 91);
    [hostA, hostB] = mesh.hosts;
    await listeningFleetDaemon();
    agentA = await startNodeAgent(hostA, NODE_A);
    agentB = await startNodeAgent(hostB, NODE_B);
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
    mesh?.remove();
  });

  const logs = () =>
    `\nnode A: ${agentA?.output.slice(-3000)}\nnode B: ${agentB?.output.slice(-3000)}`;

  it("reaches a VM's SSH at the other node's address, at the same URL after a live move, and with the old node dead", async () => {
    const createdAt = Date.now();
    const created = await ppnFleet(
      [
        'vm',
        'create',
        '--type',
        'meshed',
        '--ram',
        '512',
        '--vcpus',
        '1',
        '--node',
        NODE_A,
        '--json',
      ],
      {},
    );
    expect(created.code).toBe(0);
    const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
    const sshPort = (await listedOn(vmId, NODE_A)).host_ports[0].host_port;

    // Node B's mesh listens on the VM's SSH port at B's address; the office uses that URL.
    await agentB.waitForOutput(
      new RegExp(
        `routing mesh listens on 1 port\\(s\\) of other nodes' VMs at ${hostB.address.replace(/\./g, '\\.')} \\(1 opened`,
      ),
      30_000,
    );
    const bootId = (
      await sshOnceUp(key, hostB.address, sshPort, 'cat /proc/sys/kernel/random/boot_id', {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(workDir, NODE_A, 'run', vmId, 'serial.log'),
      })
    ).trim();
    expect(bootId).toMatch(/^[0-9a-f-]{36}$/);

    // Moved live to node B: node B's mesh gives the port back to the VM, the same URL reaches it.
    const moved = await ppnFleet(['vm', 'move', vmId, '--to', NODE_B], {}, WAIT_MS);
    if (moved.code !== 0) throw new Error(`vm move exited ${moved.code}: ${moved.stderr}${logs()}`);
    expect((await listedOn(vmId, NODE_B)).host_ports[0].host_port).toBe(sshPort);
    expect(agentB.output).toContain(
      `routing mesh let ${hostB.address}:${sshPort}/tcp go to a VM of this node (was forwarded to vm ${vmId} on node ${NODE_A})`,
    );
    const switched = Date.now();
    const atB = await sshOnceUp(
      key,
      hostB.address,
      sshPort,
      'cat /proc/sys/kernel/random/boot_id',
      {
        since: switched,
        deadlineMs: SSH_AFTER_MOVE_MS,
        serialLog: join(workDir, NODE_B, 'run', vmId, 'serial.log'),
      },
    );
    expect(atB.trim()).toBe(bootId);
    console.log(`routing mesh: SSH at the same URL ${Date.now() - switched} ms after the move`);

    // Node A, which ran it, now forwards the port to node B: its address works too.
    const atA = await sshOnceUp(
      key,
      hostA.address,
      sshPort,
      'cat /proc/sys/kernel/random/boot_id',
      {
        since: Date.now(),
        deadlineMs: SSH_AFTER_MOVE_MS,
        serialLog: join(workDir, NODE_B, 'run', vmId, 'serial.log'),
      },
    ).catch((error: Error) => {
      throw new Error(`${error.message}${logs()}`);
    });
    expect(atA.trim()).toBe(bootId);

    // Node A dead (its agent and all): the URL the office used still answers.
    hostA.killAll();
    await emptied(hostA);
    const afterDeath = await sshOnceUp(
      key,
      hostB.address,
      sshPort,
      'cat /proc/sys/kernel/random/boot_id',
      {
        since: Date.now(),
        deadlineMs: SSH_AFTER_MOVE_MS,
        serialLog: join(workDir, NODE_B, 'run', vmId, 'serial.log'),
      },
    );
    expect(afterDeath.trim()).toBe(bootId);
  });
});
