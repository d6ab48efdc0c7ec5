import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, FLEET_URL, enrolled, startAgent } from '../support/daemons';
import { guestImagePath } from '../support/guest-image';
import { scratchFolder } from '../support/scratch-folders';

/** An agent of the bench's on the guest image, its own key and folder. */
export interface GuestAgent {
  agent: Daemon;
  /** Its VM_DISK_DIR is `disks` there. */
  workDir: string;
  /** The private key whose public half the VMs get. */
  key: string;
}

/** Starts one, enrolled with the controller on 9203, as `nodeId`. */
export async function startGuestAgent(nodeId: string): Promise<GuestAgent> {
  const image = guestImagePath();
  if (!existsSync(image)) throw new Error(`no guest image ${image}: build it first`);
  const workDir = scratchFolder(`${nodeId}-`);
  const key = join(workDir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'bench', '-f', key]);
  const agent = await enrolled(
    startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: nodeId,
      VM_WG_IP: '127.0.0.1',
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: join(workDir, 'disks'),
      VM_DISK_RETENTION_S: '0',
      VM_BASE_IMAGE: image,
      VM_SSH_PUBKEY: readFileSync(`${key}.pub`, 'utf8').trim(),
    }),
  );
  return { agent, workDir, key };
}
