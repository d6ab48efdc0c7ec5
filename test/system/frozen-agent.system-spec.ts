import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  listedNodes,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * An agent frozen (SIGSTOP) while a keyed create is sent to it: the controller gives up after
 * its 10 s, the client retries with the same key once the node has dropped out (as the CLI
 * advises), and the other node makes the VM. When the frozen agent resumes, it reads the spawn
 * it was sent long ago, past its deadline, and refuses it: one key, one VM.
 */
jest.setTimeout(150_000);

const FROZEN = 'frozen-node';
const OTHER = 'other-node';
const workDir = scratchFolder('frozen-agent-');
const baseImage = join(workDir, 'base.qcow2');

interface Answer {
  status: number;
  body: { vm_id?: string; node_id?: string; message?: string };
}

async function create(key: string): Promise<Answer> {
  const response = await fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ vm_type: 'frozen', ram_mb: 64, vcpu_count: 1 }),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** The VMs an agent itself has, asked of it directly (its spawn port, no token set). */
async function agentVms(wgIp: string): Promise<Array<{ vm_id: string }>> {
  const response = await fetch(`http://${wgIp}:9204/v1/vms`);
  return (await response.json()) as Array<{ vm_id: string }>;
}

describe('an agent frozen during a keyed create', () => {
  let frozen: Daemon;

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    await listeningFleetDaemon();
    const agent = (nodeId: string, wgIp: string, reserved: boolean) =>
      enrolled(
        startAgent({
          VM_FLEET_ENDPOINT: FLEET_URL,
          VM_NODE_ID: nodeId,
          VM_WG_IP: wgIp,
          VM_HEARTBEAT_INTERVAL_S: '1',
          VM_DISK_DIR: join(workDir, nodeId),
          VM_BASE_IMAGE: baseImage,
          // The other node is placed on only when the frozen one cannot be.
          VM_RESERVED: String(reserved),
        }),
      );
    frozen = await agent(FROZEN, '127.0.0.6', false);
    await agent(OTHER, '127.0.0.7', true);
  });

  afterAll(async () => {
    if (frozen?.alive) frozen.process.kill('SIGCONT');
    await stopAllDaemons();
  });

  it('makes one VM for the key: the resumed agent refuses the spawn whose deadline has passed', async () => {
    frozen.process.kill('SIGSTOP');
    const first = await create('frozen-1');
    expect(first.status).toBe(502);
    expect(first.body.message).toBe(`agent of node ${FROZEN} could not be reached`);

    // Retried as the CLI advises, once the frozen node has dropped out: the other node.
    await eventually(
      'the frozen node to drop out',
      async () =>
        (await listedNodes()).some((node) => node.node_id === FROZEN) ? undefined : true,
      45_000,
      500,
    );
    const retry = await create('frozen-1');
    expect([retry.status, retry.body.node_id]).toEqual([201, OTHER]);

    frozen.process.kill('SIGCONT');
    await frozen.waitForOutput(/spawn refused, its deadline \S+ had passed/);
    await eventually(
      'the resumed node to beat again',
      async () =>
        (await listedNodes()).some((node) => node.node_id === FROZEN) ? true : undefined,
      20_000,
      200,
    );
    expect(await agentVms('127.0.0.6')).toEqual([]);
    expect(liveQemusUnder(join(workDir, FROZEN))).toEqual([]);
    const listed = (await (await fetch(`${FLEET_URL}/v1/vms`)).json()) as Answer['body'][];
    expect(listed.map((vm) => [vm.vm_id, vm.node_id])).toEqual([[retry.body.vm_id, OTHER]]);
    // And the key goes on answering that VM.
    const again = await create('frozen-1');
    expect([again.status, again.body.vm_id]).toEqual([200, retry.body.vm_id]);
  });
});
