import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  OUTPUT_TIMEOUT_MS,
  enrolled,
  eventually,
  getJson,
  listedNodes,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The how-to's rollback done in the wrong order: the agent is stopped (SIGTERM, as systemctl
 * stop sends it; QEMU is left running) while its VMs run. With the built controller, a real
 * agent and real QEMU guests (TCG, 64 MB, a blank base image): once the node drops out, its VMs
 * are still listed with their node, a DELETE says what to do instead of a 404, a forgotten
 * record stops nothing, another machine heartbeating with the same VM_NODE_ID (its own disks)
 * leaves the VM it does not list listed and silent, and the agent started again with the same
 * VM_NODE_ID and VM_DISK_DIR makes them deletable, QEMU and all. The controller's monotonic clock is jumped past the 30 s
 * (test/support/monotonic-clock-jump.cjs) rather than waited for.
 */
jest.setTimeout(120_000);

const NODE = 'stopping-node';
const JUMP = join(__dirname, '../support/monotonic-clock-jump.cjs');

const workDir = scratchFolder('silent-node-vms-');
const baseImage = join(workDir, 'base.qcow2');
const diskDir = join(workDir, NODE);

interface ListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  node_silent_since?: string;
}

function runningGuests(): string[] {
  const guests = liveQemusUnder(workDir).map(({ args }) => args[args.indexOf('-name') + 1]);
  return [...new Set(guests)].sort();
}

/** The node's agent; `clone`: another machine given the same VM_NODE_ID (its own disks). */
function agent(clone = false): Daemon {
  return startAgent({
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: NODE,
    VM_WG_IP: clone ? '127.0.0.6' : '127.0.0.5',
    VM_HEARTBEAT_INTERVAL_S: '1',
    VM_DISK_DIR: clone ? join(workDir, 'clone') : diskDir,
    VM_BASE_IMAGE: baseImage,
  });
}

async function createVm(): Promise<ListedVm> {
  const response = await fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ vm_type: 'silent', ram_mb: 64, vcpu_count: 1 }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as ListedVm;
}

async function deleteVm(vmId: string, query = ''): Promise<{ status: number; message?: string }> {
  const response = await fetch(`${FLEET_URL}/v1/vms/${vmId}${query}`, { method: 'DELETE' });
  const text = await response.text();
  return {
    status: response.status,
    message: text ? (JSON.parse(text) as { message: string }).message : undefined,
  };
}

/** What the how-to's rollback reads: the node's VMs, by node_id, with jq's select as in docs/nodes.md. */
async function vmsOfNode(): Promise<ListedVm[]> {
  return (await getJson<ListedVm[]>('/v1/vms')).filter((vm) => vm.node_id === NODE);
}

describe('an agent stopped while its VMs run', () => {
  let fleet: Daemon;

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    fleet = startFleetDaemon({ MONOTONIC_JUMP_MS: String(NODE_STALE_AFTER_MS + 2_000) }, [
      '--require',
      JUMP,
    ]);
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  it('leaves them listed and explained, never out of reach, until the agent is back to delete them', async () => {
    const first = await enrolled(agent());
    const [kept, forgotten] = [await createVm(), await createVm()];
    expect([kept.node_id, forgotten.node_id]).toEqual([NODE, NODE]);
    await eventually(
      'both guests running, as the node reports them',
      async () => {
        const vms = await vmsOfNode();
        return runningGuests().length === 2 && vms.every((vm) => vm.state === 'Running')
          ? true
          : undefined;
      },
      OUTPUT_TIMEOUT_MS,
    );

    // systemctl stop: SIGTERM to the agent alone. Its last lines say what becomes of the VMs.
    expect(await first.stop()).toEqual({ code: 0, signal: null });
    expect(first.output).toMatch(
      /agent stopping; its 2 VM\(s\) \(.*\) are left as they are: running ones keep running, unmanaged\. Once the node drops out \(30 s\) the controller still lists them, with node_silent_since, but cannot delete them \(409\) until this agent starts again with the same VM_NODE_ID and VM_DISK_DIR/,
    );
    const lastBeat = (await listedNodes()).find((node) => node.node_id === NODE)!.last_heartbeat;

    // More than 30 s of silence, at once: the node drops out of every node listing.
    fleet.process.kill('SIGUSR2');
    await fleet.waitForOutput(
      new RegExp(
        `WARN \\[Nodes\\] node ${NODE} dropped after 3\\d\\.\\d s without a heartbeat; its 2 VM\\(s\\) \\(.*\\) may still run, unmanaged`,
      ),
    );
    expect((await listedNodes()).map((node) => node.node_id)).not.toContain(NODE);
    expect((await fetch(`${FLEET_URL}/v1/nodes/${NODE}`)).status).toBe(404);
    expect(runningGuests()).toEqual([`guest=${forgotten.vm_id}`, `guest=${kept.vm_id}`].sort());

    // Its VMs are still listed, with their node and since when it is silent.
    const listed = await vmsOfNode();
    expect(listed.map((vm) => vm.vm_id).sort()).toEqual([forgotten.vm_id, kept.vm_id].sort());
    for (const vm of listed) {
      expect(vm).toMatchObject({ node_id: NODE, state: 'Running', node_silent_since: lastBeat });
    }

    // A delete cannot reach an agent: it says so and what to do, and keeps the record.
    const refused = await deleteVm(kept.vm_id);
    expect(refused.status).toBe(409);
    expect(refused.message).toContain(
      `vm ${kept.vm_id} is on node ${NODE}, silent since ${lastBeat}`,
    );
    expect(refused.message).toContain('same VM_NODE_ID and VM_DISK_DIR');
    expect(refused.message).toContain(`DELETE /v1/vms/${kept.vm_id}?forget=true`);

    // Forgetting a record stops nothing: its QEMU runs on.
    expect((await deleteVm(forgotten.vm_id, '?forget=true')).status).toBe(204);
    expect((await vmsOfNode()).map((vm) => vm.vm_id)).toEqual([kept.vm_id]);
    expect(runningGuests()).toHaveLength(2);

    // Another machine started with the same VM_NODE_ID (a cloned configuration) lists none of
    // them: they stay listed, silent, still no agent's to delete, and the controller says who.
    const clone = await enrolled(agent(true));
    await fleet.waitForOutput(
      new RegExp(
        `WARN \\[Nodes\\] node ${NODE}: 127\\.0\\.0\\.6 \\(host .*\\) heartbeats for it and does not list 1 VM\\(s\\) \\(${kept.vm_id}\\) that 127\\.0\\.0\\.5 \\(host .*\\) listed before the node went silent`,
      ),
    );
    expect((await listedNodes()).find((node) => node.node_id === NODE)).toMatchObject({
      wg_ip: '127.0.0.6',
      vm_count: 0,
    });
    expect(await vmsOfNode()).toEqual([
      expect.objectContaining({ vm_id: kept.vm_id, node_silent_since: lastBeat }),
    ]);
    const cloned = await deleteVm(kept.vm_id);
    expect(cloned.status).toBe(409);
    expect(cloned.message).toContain(`listed on node ${NODE} by the agent at 127.0.0.5`);
    expect(runningGuests()).toHaveLength(2);
    expect(await clone.stop()).toEqual({ code: 0, signal: null });
    fleet.process.kill('SIGUSR2');
    await fleet.waitForOutput(
      new RegExp(`node ${NODE} dropped after .* its 1 VM\\(s\\) \\(${kept.vm_id}\\) may still run`),
    );

    // The agent again, with the same id and folder: it adopts both QEMU processes, and its
    // first heartbeat replaces what was kept (the forgotten VM is back too: it still runs).
    const second = await enrolled(agent());
    await fleet.waitForOutput(
      new RegExp(
        `node ${NODE} joined from 127\\.0\\.0\\.5 .*; silent since its heartbeat of .*, its 1 VM\\(s\\) kept meanwhile are replaced by the 2 it reports`,
      ),
    );
    const back = await vmsOfNode();
    expect(back.map((vm) => vm.vm_id).sort()).toEqual([forgotten.vm_id, kept.vm_id].sort());
    for (const vm of back) expect(vm).not.toHaveProperty('node_silent_since');

    for (const vm of [kept, forgotten]) expect((await deleteVm(vm.vm_id)).status).toBe(204);
    expect(await vmsOfNode()).toEqual([]);
    await eventually(
      'no QEMU left',
      () => Promise.resolve(runningGuests().length === 0 ? true : undefined),
      OUTPUT_TIMEOUT_MS,
    );
    expect(second.alive).toBe(true);
  });
});
