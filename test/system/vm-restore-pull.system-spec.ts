import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, stopAllDaemons } from '../support/daemons';
import {
  copiedGuestWithFile,
  guestAndKey,
  expectSameGuest,
  jumpUntilSilent,
  onLoopback,
  startCopiesNode,
  startJumpingFleet,
} from '../support/copied-guests';
import { GUEST_SSH_DEADLINE_MS } from '../support/guest-ssh';
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
    const guest = await copiedGuestWithFile(setUp, {
      type: 'pulled',
      nodeId: SOURCE.id,
      address: SOURCE.ip,
      webPort: WEB_PORT,
    });
    const { vmId, copied } = guest;
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
    await jumpUntilSilent(fleet, vmId, SOURCE.id, [HOLDER.id, TARGET.id]);

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
    await expectSameGuest(setUp, guest, { nodeId: TARGET.id, address: TARGET.ip, restoredAt });
  });
});
