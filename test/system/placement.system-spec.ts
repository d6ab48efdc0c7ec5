import { execFileSync } from 'node:child_process';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import {
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(60_000);

/**
 * Placement counts RAM committed to VMs, not sampled, end to end: a real controller, a real
 * agent, real QEMU guests that are given far more RAM than they touch. Idle guests use almost
 * nothing, so a controller that trusted sampled memory would place every one of them.
 */
const NODE_ID = 'ram-node-a';
const workDir = scratchFolder('ram-commit-');
const baseImage = join(workDir, 'base.qcow2');

interface NodeView {
  ram_available_mb: number;
  vm_count: number;
  last_heartbeat: string;
}

async function create(ramMb: number): Promise<{ status: number; body: Record<string, string> }> {
  const response = await fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ vm_type: 'ram-e2e', ram_mb: ramMb, vcpu_count: 1 }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
}

/** Resolves once the node has beaten `beats` more times, listing `vmCount` VMs. */
async function afterHeartbeats(vmCount: number, beats: number): Promise<NodeView> {
  let seen = (await getJson<NodeView>(`/v1/nodes/${NODE_ID}`)).last_heartbeat;
  let view: NodeView | undefined;
  for (let beat = 0; beat < beats; beat++) {
    view = await eventually(
      `heartbeat ${beat + 1} of ${NODE_ID} listing ${vmCount} VMs`,
      async () => {
        const node = await getJson<NodeView>(`/v1/nodes/${NODE_ID}`);
        return node.last_heartbeat !== seen && node.vm_count === vmCount ? node : undefined;
      },
      10_000,
    );
    seen = view.last_heartbeat;
  }
  return view!;
}

describe('RAM committed to VMs, not sampled', () => {
  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    await listeningFleetDaemon();
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE_ID,
        VM_WG_IP: '127.0.0.4',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, NODE_ID),
        VM_BASE_IMAGE: baseImage,
      }),
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  it('places two idle guests of 40% of host RAM a few heartbeats apart, and refuses the third naming the node and the numbers', async () => {
    const available = (await getJson<NodeView>(`/v1/nodes/${NODE_ID}`)).ram_available_mb;
    // 40% of the host; less on a machine already busy, so that exactly two fit either way.
    const ramMb = Math.min(
      Math.floor((totalmem() / 1024 / 1024) * 0.4),
      Math.floor(available * 0.45),
    );

    const first = await create(ramMb);
    expect(first.status).toBe(201);
    await afterHeartbeats(1, 3);

    const second = await create(ramMb);
    expect(second.status).toBe(201);
    const afterTwo = await afterHeartbeats(2, 3);
    // Both guests count with all they were given, though they touched almost none of it.
    expect(afterTwo.ram_available_mb).toBeLessThanOrEqual(available - 2 * ramMb);
    expect(liveQemusUnder(workDir)).toHaveLength(2);

    const third = await create(ramMb);
    expect(third.status).toBe(503);
    const reason = new RegExp(`${NODE_ID}: needs ${ramMb + 512} MB, has (\\d+) MB`).exec(
      third.body.message,
    );
    expect(reason).not.toBeNull();
    expect(Number(reason![1])).toBeLessThan(ramMb + 512);
    expect(liveQemusUnder(workDir)).toHaveLength(2);
  });
});
