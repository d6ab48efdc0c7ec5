import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, stopAllDaemons } from '../support/daemons';
import {
  copiedGuestWithFile,
  guestAndKey,
  inNamespace,
  expectSameGuest,
  jumpUntilSilent,
  startCopiesNode,
  startJumpingFleet,
} from '../support/copied-guests';
import { GUEST_SSH_DEADLINE_MS } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { NodeMesh, emptied } from '../support/node-mesh';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The first promise, with the built daemons and the Debian guest, each node an agent in
 * a network namespace of its own: a VM copied to the other node every 30 s; a file written and
 * synced in the guest; the next copy taken; then its node killed whole (every process of its
 * namespace, its agent and QEMU, at once; its disk folder deleted) and, with no backup
 * anywhere, `ppn-fleet vm restore <vm_id> --to <the peer>` brings it back from the copy alone:
 * over SSH the file, the same host key, the VM's id and its published ports. The controller's
 * monotonic clock is jumped past the 30 s silence (monotonic-clock-jump.cjs).
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 600_000);

const SECRET = 'copy-restore-node-secret-0123456789abcdef';
const SOURCE = 'copied-a';
const PEER = 'copied-b';
const WEB_PORT = 48_180;
const workDir = scratchFolder('vm-copy-restore-');

describe("a dead node's VM restored from its copy on the other node", () => {
  let fleet: Daemon;
  let key: string;
  let pubkey: string;
  let mesh: NodeMesh | undefined;

  beforeAll(async () => {
    ({ key, pubkey } = guestAndKey(workDir, 'copy-restore'));
    mesh = NodeMesh.create(['ppn-copy-a', 'ppn-copy-b'], 71);
    fleet = await startJumpingFleet(SECRET);
  });

  afterAll(async () => {
    await stopAllDaemons();
    mesh?.remove();
    killQemusUnder(workDir);
  });

  it('brings it back with the file synced before the last copy, its host key, id and ports', async () => {
    const [sourceHost, peerHost] = mesh!.hosts;
    const setUp = { workDir, key, pubkey, secret: SECRET };
    const source = await startCopiesNode(SOURCE, inNamespace(sourceHost), setUp);
    const peer = await startCopiesNode(PEER, inNamespace(peerHost), setUp);
    const guest = await copiedGuestWithFile(setUp, {
      type: 'copied',
      nodeId: SOURCE,
      address: sourceHost.address,
      webPort: WEB_PORT,
    });
    // Held by the peer, shown in the listing.
    const { vmId } = guest;
    expect(guest.copied.copy_node_id).toBe(PEER);
    const copies = await ppnFleet(['vm', 'copies', vmId]);
    expect(copies.code).toBe(0);
    expect(copies.stdout).toContain(PEER);

    // The source dies whole: every process of its namespace killed at once (its agent and the
    // VM's QEMU among them), its disk folder gone. No backup anywhere.
    const [qemu] = liveQemusUnder(join(workDir, SOURCE)).map(({ pid }) => pid);
    expect(sourceHost.killAll()).toEqual(expect.arrayContaining([source.process.pid, qemu]));
    await source.waitForExit(10_000);
    await emptied(sourceHost);
    rmSync(join(workDir, SOURCE), { recursive: true, force: true });
    await jumpUntilSilent(fleet, vmId, SOURCE, [PEER]);

    const restoredAt = Date.now();
    const restored = await ppnFleet(['vm', 'restore', vmId, '--to', PEER], {}, 300_000);
    if (restored.code !== 0) {
      throw new Error(
        `vm restore exited ${restored.code}: ${restored.stderr}\npeer: ${peer.output.slice(-3000)}`,
      );
    }
    expect(restored.stdout).toContain(`${vmId} restored on node ${PEER}`);
    await expectSameGuest(setUp, guest, { nodeId: PEER, address: peerHost.address, restoredAt });
  });
});
