import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, eventually, startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import {
  guestKey,
  guestOn,
  leftOf,
  listedNodesOf,
  listedOn,
  moveNodes,
  qemusOn,
  startMoveNode,
} from '../support/move-nodes';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Live moves cut midway, with the built daemons and the Debian guest under TCG, two agents as in
 * vm-move.system-spec.ts. Each time the VM ends running on exactly one node (one QEMU of it
 * across both nodes' folders), with its data and the same boot, and the controller lists it on
 * that node only:
 * - the old node's agent killed while the disk is mirrored (its QEMU lives on): the mirror ends
 *   with the relay, the guest runs on; the controller tells the new node to give the move up,
 *   which stops its waiting QEMU at once;
 * - the mesh between the two nodes cut (nft drops every packet to node B but to its agent's API
 *   port, which the controller and node A's give-up use): the mirror sends nothing for 30 s
 *   (MOVE_STALL_MS), node A gives the move up and runs the guest on; then the mesh heals.
 */
jest.setTimeout(GUEST_SSH_DEADLINE_MS + 420_000);

const workDir = scratchFolder('vm-move-cuts-');
const WAIT_MS = 300_000;
const { a: A, b: B } = moveNodes(workDir);
const CUT_TABLE = 'ppn_move_cut';

/**
 * The move's streams between the nodes (every TCP connection on this machine but those of the
 * agents' and the controller's APIs and the guest's SSH forward) through a table of the test's
 * own: slowed to `MESH_BYTES_S` (a policer), so a move of the guest spends some seconds on its
 * disk, and cut on demand.
 */
const MESH_BYTES_S = '20 mbytes/second';
// Its full path, as the agent's: under npx, PATH's first `nft` is @vercel/nft's command.
const NFT = '/usr/sbin/nft';
const nft = (...args: string[]) => execFileSync(NFT, args, { stdio: 'pipe' });
let sshPortKept = 22;
const streams = () => {
  const kept = `{ 9203, 9206, ${A.spawnPort}, ${B.spawnPort}, ${sshPortKept} }`;
  return ['tcp', 'dport', '!=', kept, 'tcp', 'sport', '!=', kept];
};

function slowMesh(): void {
  nft('add', 'table', 'inet', CUT_TABLE);
  nft(
    'add',
    'chain',
    'inet',
    CUT_TABLE,
    'out',
    '{ type filter hook output priority 0; policy accept; }',
  );
  nft(
    'add',
    'rule',
    'inet',
    CUT_TABLE,
    'out',
    ...streams(),
    'limit',
    'rate',
    'over',
    MESH_BYTES_S,
    'burst',
    '2',
    'mbytes',
    'drop',
  );
}

function cutMesh(): void {
  nft('insert', 'rule', 'inet', CUT_TABLE, 'out', ...streams(), 'drop');
}

function healMesh(): void {
  try {
    nft('delete', 'table', 'inet', CUT_TABLE);
  } catch {
    // not there
  }
}

/** Bytes in a node's disk folder (the mirror's writes land there). */
function bytesOn(which: { diskDir: string }): number {
  return Number(execFileSync('du', ['-sb', which.diskDir], { encoding: 'utf8' }).split(/\s/)[0]);
}

describe('a live move cut midway', () => {
  let fleet: Daemon;
  let agents: Daemon[] = [];
  let key: string;
  let pubkey: string;
  let vm: { vmId: string; sshPort: number; kept: string; bootId: string } | undefined;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(
        `no guest image ${guestImagePath()}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    ({ key, pubkey } = guestKey(workDir));
    fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    agents = [await startMoveNode(A, pubkey), await startMoveNode(B, pubkey)];
    const guest = await guestOn(
      A,
      key,
      'head -c 1048576 /dev/urandom > ~/kept && sync && sha256sum ~/kept && cat /proc/sys/kernel/random/boot_id',
      // No copies to node B meanwhile: the moves alone on the mesh.
      ['--copies', '0'],
    );
    const [kept, bootId] = guest.output.trim().split('\n');
    vm = { vmId: guest.vmId, sshPort: guest.sshPort, kept, bootId };
    sshPortKept = guest.sshPort;
  });

  afterAll(async () => {
    healMesh();
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  const logs = () =>
    `\nnode A: ${agents[0]?.output.slice(-3000)}\nnode B: ${agents[1]?.output.slice(-3000)}\ncontroller: ${fleet.output.slice(-2000)}`;

  /**
   * Starts a move to B over the slowed mesh and resolves once node A mirrors the disk there (its
   * relay open): the move then spends some seconds on the disk.
   */
  async function moveUnderWay(vmId: string) {
    slowMesh();
    const startedAt = Date.now();
    const before = bytesOn(B);
    const moving = ppnFleet(['vm', 'move', vmId, '--to', B.id], {}, WAIT_MS);
    // This move's relay: a move cut before may have left its socket file (the agent replaces it).
    const relay = join(A.diskDir, 'run', vmId, 'move-nbd');
    await eventually(
      'the mirror under way',
      () =>
        Promise.resolve(
          existsSync(relay) && statSync(relay).ctimeMs >= startedAt - 1_000 ? true : undefined,
        ),
      60_000,
      50,
    ).catch(async (error: Error) => {
      const run = await moving;
      throw new Error(
        `${error.message}; vm move exited ${run.code}: ${run.stdout}${run.stderr}${logs()}`,
      );
    });
    // Then 16 MB of the disk written on node B: the mirror under way (its connection made).
    await eventually(
      'the mirror writing on node B',
      () => Promise.resolve(bytesOn(B) > before + 16 * 2 ** 20 ? true : undefined),
      60_000,
      50,
    );
    // Wrapped: an async function returning the promise itself would wait for the move's end.
    return { moving };
  }

  /**
   * The VM on node A only: one QEMU, listed there, its data, and the same boot unless `restartOk`
   * (a mesh cut during the NBD handshake can leave QEMU's QMP silent until the move gives up:
   * the agent may then start the guest again from its disk, seen once in CI).
   */
  async function onAOnly(
    vmId: string,
    sshPort: number,
    kept: string,
    bootId: string,
    restartOk = false,
  ) {
    await eventually(
      'one QEMU of the VM, on node A',
      () => Promise.resolve(qemusOn(A, B).join() === '1,0' ? true : undefined),
      60_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}: QEMUs on A, B: ${qemusOn(A, B).join()}${logs()}`);
    });
    await listedOn(vmId, A.id, 'Running', 60_000);
    expect(await listedNodesOf(vmId)).toEqual([A.id]);
    const seen = await sshOnceUp(
      key,
      A.wgIp,
      sshPort,
      'sha256sum ~/kept && cat /proc/sys/kernel/random/boot_id',
      {
        since: Date.now(),
        deadlineMs: 60_000,
        serialLog: join(A.diskDir, 'run', vmId, 'serial.log'),
      },
    );
    const [keptNow, bootNow] = seen.trim().split('\n');
    expect(keptNow).toBe(kept);
    if (restartOk) {
      console.log(
        `after the cut the guest ${bootNow === bootId ? 'went on (same boot)' : 'was started again from its disk on node A'}`,
      );
    } else expect(bootNow).toBe(bootId);
    await eventually(
      'node B without the VM',
      () => Promise.resolve(leftOf(B, vmId).length === 0 ? true : undefined),
      30_000,
      200,
    );
  }

  it("killing the old node's agent midway leaves the VM running on the old node only", async () => {
    if (!vm) throw new Error('no VM');
    const { vmId, sshPort, kept, bootId } = vm;
    const { moving } = await moveUnderWay(vmId);
    agents[0].process.kill('SIGKILL');
    await agents[0].waitForExit(10_000);
    const cut = await moving;
    healMesh();
    if (cut.code === 0) throw new Error(`the move was not cut: ${cut.stdout}${logs()}`);
    expect(cut.stderr).toContain(`node ${A.id}`);
    // The new node gave it up when the controller told it, its waiting QEMU stopped: one QEMU
    // (node A's, which the dead agent left running), before node A's agent is back.
    await eventually(
      'no QEMU of the VM on node B',
      () => Promise.resolve(qemusOn(B)[0] === 0 ? true : undefined),
      60_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}${logs()}`);
    });
    expect(qemusOn(A)).toEqual([1]);
    agents[0] = await startMoveNode(A, pubkey);
    await onAOnly(vmId, sshPort, kept, bootId);
  });

  it('cutting the mesh between the nodes midway leaves the VM running on the old node only, after the mesh heals too', async () => {
    if (!vm) throw new Error('no VM');
    const { vmId, sshPort, kept, bootId } = vm;
    const { moving } = await moveUnderWay(vmId);
    cutMesh();
    const cutAt = Date.now();
    const cut = await moving;
    console.log(`mesh cut: the move gave up ${Date.now() - cutAt} ms after the cut`);
    if (cut.code === 0) throw new Error(`the move was not cut: ${cut.stdout}${logs()}`);
    expect(cut.stderr).toContain(`the VM is left on node ${A.id}`);
    expect(agents[0].output).toMatch(
      new RegExp(`vm ${vmId}: live move to node ${B.id} failed \\(.*sent nothing for 30 s`),
    );
    await onAOnly(vmId, sshPort, kept, bootId, true);
    healMesh();
    // Healed: nothing of the move comes back to life on node B.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(qemusOn(A, B)).toEqual([1, 0]);
    expect(await listedNodesOf(vmId)).toEqual([A.id]);
    expect((await sshRun(key, A.wgIp, sshPort, 'cat /proc/sys/kernel/random/boot_id')).trim()).toBe(
      bootId,
    );
  });
});
