import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, eventually, getJson, startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { listedOn, moveNodes, startMoveNode } from '../support/move-nodes';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * `ppn-fleet node drain` of a node with three VMs, with the built daemons and the Debian guest
 * under TCG, two agents on loopback addresses of their own (test/support/move-nodes.ts): one
 * Running VM (moved live) and two Stopped ones (moved cold, cheap: CI time). All three end on
 * the other node, in the state they had, the drained node with no QEMU and no disk left; the
 * drained node is refused as a create's node, saying why, until `node undrain`; then a VM moves
 * back to it. Each step is a command an operator types.
 */
jest.setTimeout(600_000);

const workDir = scratchFolder('node-drain-');
const WAIT_MS = 300_000;
const { a: A, b: B } = moveNodes(workDir);

describe('draining a node', () => {
  let fleet: Daemon;
  let agents: Daemon[] = [];

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(
        `no guest image ${guestImagePath()}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    agents = [await startMoveNode(A, undefined), await startMoveNode(B, undefined)];
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  const failed = (what: string, run: { code: number | null; stdout: string; stderr: string }) =>
    new Error(
      `${what} exited ${run.code}: ${run.stdout}${run.stderr}\nnode A: ${agents[0]?.output.slice(-3000)}\nnode B: ${agents[1]?.output.slice(-3000)}\ncontroller: ${fleet.output.slice(-3000)}`,
    );

  async function created(ramMb: number): Promise<string> {
    const run = await ppnFleet(
      [
        'vm',
        'create',
        '--type',
        'drained',
        '--ram',
        String(ramMb),
        '--vcpus',
        '1',
        '--node',
        A.id,
        '--json',
      ],
      {},
      WAIT_MS,
    );
    if (run.code !== 0) throw failed('vm create', run);
    const vmId = (JSON.parse(run.stdout) as { vm_id: string }).vm_id;
    await listedOn(vmId, A.id, 'Running');
    return vmId;
  }

  it('moves its three VMs to the other node (live, cold, cold) and is not placed on until undrained', async () => {
    const running = await created(512);
    const stopped = [await created(256), await created(256)];
    for (const vmId of stopped) {
      const stop = await ppnFleet(['vm', 'stop', vmId, '--force'], {}, WAIT_MS);
      if (stop.code !== 0) throw failed('vm stop', stop);
      await listedOn(vmId, A.id, 'Stopped');
    }

    const startedAt = Date.now();
    const drained = await ppnFleet(['node', 'drain', A.id], {}, WAIT_MS);
    if (drained.code !== 0) throw failed('node drain', drained);
    console.log(
      `node drain of 1 running and 2 stopped VMs took ${Date.now() - startedAt} ms:\n${drained.stdout}`,
    );
    expect(drained.stdout).toMatch(
      new RegExp(`^node ${A.id} drained since \\S+: placement passes it over`),
    );
    expect(drained.stdout).toMatch(new RegExp(`  ${running}: moved live to node ${B.id} in `));
    for (const vmId of stopped) {
      expect(drained.stdout).toMatch(new RegExp(`  ${vmId}: moved cold to node ${B.id} in `));
      // The controller's log names the node and each VM.
      expect(fleet.output).toMatch(
        new RegExp(`node ${A.id}: drain moved vm ${vmId} cold to node ${B.id}`),
      );
    }
    expect(drained.stdout).toContain(`node ${A.id} runs no VM`);
    await listedOn(running, B.id, 'Running');
    for (const vmId of stopped) await listedOn(vmId, B.id, 'Stopped');
    expect(liveQemusUnder(A.diskDir)).toEqual([]);
    await eventually(
      'node A without any disk',
      () =>
        Promise.resolve(
          [running, ...stopped].every(
            (vmId) => !existsSync(join(A.diskDir, 'disks', `${vmId}.qcow2`)),
          )
            ? true
            : undefined,
        ),
      30_000,
      200,
    );
    // Still enrolled and listed.
    expect(
      (await getJson<Array<{ node_id: string }>>('/v1/nodes')).map(({ node_id }) => node_id),
    ).toContain(A.id);

    // Not placed on: a create naming it is refused, saying why.
    const refused = await ppnFleet(
      ['vm', 'create', '--type', 'drained', '--ram', '256', '--vcpus', '1', '--node', A.id],
      {},
      WAIT_MS,
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      new RegExp(`preferred_node ${A.id}: drained since \\S+ \\(ppn-fleet node undrain ends it\\)`),
    );
    const status = await ppnFleet(['node', 'drain-status', A.id]);
    expect(status.stdout).toMatch(new RegExp(`^node ${A.id} drained since `));

    const undrained = await ppnFleet(['node', 'undrain', A.id]);
    if (undrained.code !== 0) throw failed('node undrain', undrained);
    expect(undrained.stdout).toContain(`node ${A.id} is not drained: placement may choose it`);
    // Placeable again: a stopped VM moves back to it.
    const back = await ppnFleet(['vm', 'move', stopped[0], '--to', A.id], {}, WAIT_MS);
    if (back.code !== 0) throw failed('vm move back', back);
    await listedOn(stopped[0], A.id, 'Stopped');
  });
});
