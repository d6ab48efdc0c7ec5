import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  FLEET_URL,
  ListedNode,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { TCG_OVERHEAD_MB, TCG_TRANSLATION_CACHE_MB } from '@app/fleet-domain';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * A VM that boots a real operating system, through the product: the Debian image of
 * deploy/images/build-debian-image.sh (built before the run, test/support/guest-image.ts), an
 * agent with it and VM_SSH_PUBKEY, a VM created through the controller, SSH through its
 * host_port on the node's address, the seed's hostname and key checked, the VM deleted and
 * its QEMU process gone.
 */
jest.setTimeout(GUEST_SSH_DEADLINE_MS + 60_000);

const NODE_ID = 'guest-node';
const WG_IP = '127.0.0.1';
const workDir = scratchFolder('guest-');
const key = join(workDir, 'id_ed25519');

/** A process's resident memory (VmRSS) in MiB. */
function residentMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number }>;
}

describe('a VM with a real guest (Debian, its seed, SSH)', () => {
  const image = guestImagePath();
  let pubkey: string;

  beforeAll(async () => {
    if (!existsSync(image)) {
      throw new Error(
        `no guest image ${image}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'guest-test', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    await listeningFleetDaemon();
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE_ID,
        VM_WG_IP: WG_IP,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, 'disks'),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: image,
        VM_SSH_PUBKEY: pubkey,
      }),
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  it('boots, takes the seed (hostname, key), answers SSH on host_port, and is gone once deleted', async () => {
    const createdAt = Date.now();
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vm_type: 'guest', ram_mb: 512, vcpu_count: 1 }),
    });
    expect(response.status).toBe(201);
    const { vm_id: vmId, node_id: nodeId } = (await response.json()) as {
      vm_id: string;
      node_id: string;
    };
    expect(nodeId).toBe(NODE_ID);

    const vm = await eventually(
      `${vmId} Running`,
      async () =>
        (await getJson<ListedVm[]>('/v1/vms')).find(
          (listed) => listed.vm_id === vmId && listed.state === 'Running',
        ),
      20_000,
    );
    const sshPort = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    const node = await getJson<ListedNode>(`/v1/nodes/${nodeId}`);
    expect(node.wg_ip).toBe(WG_IP);

    // Past the deadline, it says what ssh said last and how far the guest got (its console).
    const answer = await sshOnceUp(
      key,
      node.wg_ip,
      sshPort,
      'hostname; cat ~/.ssh/authorized_keys',
      {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(workDir, 'disks', 'run', vmId, 'serial.log'),
      },
    );
    console.log(
      `guest: ${vmId} answered SSH ${((Date.now() - createdAt) / 1000).toFixed(1)} s after the create`,
    );
    const [hostname, ...authorizedKeys] = answer.trim().split('\n');
    expect(hostname).toBe(`guest-${vmId.slice(-8)}`);
    expect(authorizedKeys).toEqual([pubkey]);
    // Keys only: the image's sshd drop-in.
    const sshd = await sshRun(key, node.wg_ip, sshPort, 'sudo -n /usr/sbin/sshd -T');
    expect(sshd).toMatch(/^passwordauthentication no$/m);
    expect(sshd).toMatch(/^kbdinteractiveauthentication no$/m);
    expect(sshd).toMatch(/^permitrootlogin no$/m);

    const qemus = () =>
      liveQemusUnder(workDir).filter(({ args }) => args.includes(`guest=${vmId}`));
    expect(qemus()).toHaveLength(1);

    // Under TCG, QEMU's resident memory stays within what the agent commits for the VM (its RAM
    // and TCG_OVERHEAD_MB, the translation cache bounded), also once the guest ran code enough
    // to fill a default-sized cache.
    const [qemu] = qemus();
    expect(qemu.args).toContain(`tcg,tb-size=${TCG_TRANSLATION_CACHE_MB}`);
    await sshRun(
      key,
      node.wg_ip,
      sshPort,
      // At most 20 s of it (ssh gives up at 30 s): TCG runs it slowly.
      "timeout 20 sh -c 'find / -xdev; dpkg -l; ls -lR /usr/share; sha256sum /usr/bin/*' >/dev/null 2>&1; true",
    );
    const rssMb = residentMb(qemu.pid);
    const committedMb = 512 + TCG_OVERHEAD_MB;
    console.log(
      `guest: QEMU of a 512 MB guest under TCG: ${rssMb.toFixed(0)} MB resident, ${committedMb} MB committed (${(rssMb / committedMb).toFixed(2)})`,
    );
    expect(rssMb).toBeLessThanOrEqual(committedMb);
    expect((await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' })).status).toBe(204);
    await eventually(
      `${vmId}'s QEMU process gone`,
      () => Promise.resolve(qemus().length === 0 ? true : undefined),
      15_000,
      200,
    );
  });
});
