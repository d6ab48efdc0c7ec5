import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, eventually, getJson, stopAllDaemons } from '../support/daemons';
import {
  GUEST_PROBE,
  copiedGuestWithFile,
  guestAndKey,
  listedVm,
  onLoopback,
  startCopiesNode,
  startJumpingFleet,
} from '../support/copied-guests';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Restore onto a node that does not hold the copy, with the built daemons, three agents (the
 * source, the peer the controller chose to hold its copy, and a third node) and the Debian
 * guest: a VM copied every 30 s; a file written and synced in the guest; the next copy taken;
 * its node killed whole; then `ppn-fleet vm restore <vm_id> --to <the third node>`: that node's
 * agent pulls the copy from the holder (a read grant, the holder's read route), checks it and
 * boots it: over SSH the file, the same host key, the VM's id and its published ports; nothing
 * of the pull is left in its staging folder. The controller's monotonic clock is jumped past
 * the 30 s silence (monotonic-clock-jump.cjs).
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 600_000);

const SECRET = 'copy-restore-node-secret-0123456789abcdef';
const SOURCE = { id: 'pulled-a', ip: '127.0.0.61' };
const NODES = [
  { id: 'pulled-b', ip: '127.0.0.62' },
  { id: 'pulled-c', ip: '127.0.0.63' },
];
const WEB_PORT = 48_280;
const workDir = scratchFolder('vm-restore-pull-');

describe("a dead node's VM restored on a node that does not hold its copy", () => {
  let fleet: Daemon;
  let key: string;
  let pubkey: string;

  beforeAll(async () => {
    ({ key, pubkey } = guestAndKey(workDir, 'copy-restore'));
    fleet = await startJumpingFleet(SECRET);
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  it('pulls the copy from its holder and boots it: the file synced before the last copy, host key, id and ports', async () => {
    const setUp = { workDir, key, pubkey, secret: SECRET };
    const startNode = (node: typeof SOURCE) => startCopiesNode(node.id, onLoopback(node.ip), setUp);
    const source = await startNode(SOURCE);
    const others = [await startNode(NODES[0]), await startNode(NODES[1])];
    const { vmId, before, sshPort, probed, copied } = await copiedGuestWithFile(setUp, {
      type: 'pulled',
      nodeId: SOURCE.id,
      address: SOURCE.ip,
      webPort: WEB_PORT,
    });
    // The holder is the peer the controller chose; the VM is restored on the other node.
    const holderAt = NODES.findIndex(({ id }) => id === copied.copy_node_id);
    expect(holderAt).toBeGreaterThanOrEqual(0);
    const HOLDER = NODES[holderAt];
    const TARGET = NODES[1 - holderAt];
    const target = others[1 - holderAt];

    // The source dies whole: agent and QEMU killed, its disk folder gone. No backup anywhere.
    source.process.kill('SIGKILL');
    await source.waitForExit(10_000);
    killQemusUnder(join(workDir, SOURCE.id));
    rmSync(join(workDir, SOURCE.id), { recursive: true, force: true });
    fleet.process.kill('SIGUSR2');
    // The jump makes every node silent at once: the peer is live again at its next heartbeat.
    await eventually(
      'the source silent, the peer live',
      async () => {
        const live = (await getJson<Array<{ node_id: string }>>('/v1/nodes')).map(
          ({ node_id }) => node_id,
        );
        const silent = (await listedVm(vmId))?.node_silent_since !== undefined;
        return silent &&
          live.includes(HOLDER.id) &&
          live.includes(TARGET.id) &&
          !live.includes(SOURCE.id)
          ? true
          : undefined;
      },
      30_000,
      200,
    );

    const restoredAt = Date.now();
    const restored = await ppnFleet(['vm', 'restore', vmId, '--to', TARGET.id], {}, 300_000);
    if (restored.code !== 0) {
      throw new Error(
        `vm restore exited ${restored.code}: ${restored.stderr}\ntarget: ${target.output.slice(-3000)}\nholder: ${others[holderAt].output.slice(-3000)}`,
      );
    }
    expect(restored.stdout).toContain(`${vmId} restored on node ${TARGET.id} from replica`);
    await target.waitForOutput(
      new RegExp(`vm ${vmId}: its copy \\S+ pulled from node ${HOLDER.id}`),
      10_000,
    );
    // The staging folder is empty once the disk is made.
    expect(readdirSync(join(workDir, TARGET.id, 'pulls'))).toEqual([]);
    const after = await eventually(
      `${vmId} running on ${TARGET.id}`,
      async () => {
        const vm = await listedVm(vmId);
        return vm?.node_id === TARGET.id && vm.state === 'Running' ? vm : undefined;
      },
      120_000,
      500,
    );
    expect(after.host_ports).toEqual(before.host_ports);
    const guestB = await sshOnceUp(key, TARGET.ip, sshPort, GUEST_PROBE, {
      since: restoredAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(workDir, TARGET.id, 'run', vmId, 'serial.log'),
    });
    // The file synced before the copy, the host key and the hostname from its id: the same guest.
    expect(guestB).toBe(probed);
  });
});
