import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../files/vm-files';
import { runTool } from './run-tool';

/** How many of the vm_id's last characters (hex digits) end the guest's hostname. */
const HOSTNAME_ID_CHARACTERS = 8;
/** A hostname label's longest (RFC 1123). */
const HOSTNAME_MAX = 63;

/**
 * The guest's hostname: `<vm_type>-<last 8 characters of vm_id>` (e.g. `web-89abcdef`): VMs of
 * one type tell apart (32 random bits of their ids; the vm_id in full names the instance). The type (A-Z a-z 0-9 -, at most 63) is cut to fit
 * a 63-character label and loses leading hyphens, which no hostname may start with.
 */
export function guestHostname(vmId: string, vmType: string): string {
  const tail = vmId.slice(-HOSTNAME_ID_CHARACTERS);
  const type = vmType.replace(/^-+/, '').slice(0, HOSTNAME_MAX - tail.length - 1);
  return `${type || 'vm'}-${tail}`;
}

/** cloud-init NoCloud user-data; JSON is valid YAML, so no value can break out of its field. */
export function cloudInitUserData(hostname: string, sshPubkey?: string): string {
  const config: Record<string, unknown> = { hostname, preserve_hostname: false };
  if (sshPubkey) config.ssh_authorized_keys = [sshPubkey];
  return `#cloud-config\n${JSON.stringify(config, null, 2)}\n`;
}

/**
 * cloud-init NoCloud meta-data: the vm_id the agent made, and the guest's hostname, each a JSON
 * string (valid YAML), so neither can break out of its field whatever it holds.
 */
export function cloudInitMetaData(vmId: string, hostname: string): string {
  return `instance-id: ${JSON.stringify(vmId)}\nlocal-hostname: ${JSON.stringify(hostname)}\n`;
}

/**
 * The seed's `vm-fleet/` folder: the hostname and the SSH key as plain files, one value a line,
 * which the project's image reads with a shell script at boot (no cloud-init: its Python costs
 * most of a boot under emulation). A distribution's cloud image reads meta-data and user-data.
 */
export function plainSeedFiles(hostname: string, sshPubkey?: string): Record<string, string> {
  return {
    hostname: `${hostname}\n`,
    authorized_keys: sshPubkey ? `${sshPubkey}\n` : '',
  };
}

/** What a VM's seed ISO tells the guest, and where it goes. */
export interface SeedIso {
  vmId: string;
  vmType: string;
  sshPubkey?: string;
  /** The VM's run folder: the files are written in a `cidata` folder there, then removed. */
  workDir: string;
  /** The ISO to make, private to the agent. */
  iso: string;
}

/**
 * Makes the NoCloud seed ISO (volume `cidata`: meta-data, user-data and the same values as plain
 * files under `vm-fleet/`) with genisoimage; nothing else is left behind.
 */
export async function makeSeedIso(seed: SeedIso): Promise<string> {
  const dir = join(seed.workDir, 'cidata');
  // The whole folder goes on the ISO: nothing an interrupted run left there.
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const privately = { mode: PRIVATE_FILE_MODE };
  const hostname = guestHostname(seed.vmId, seed.vmType);
  await writeFile(join(dir, 'meta-data'), cloudInitMetaData(seed.vmId, hostname), privately);
  await writeFile(join(dir, 'user-data'), cloudInitUserData(hostname, seed.sshPubkey), privately);
  await mkdir(join(dir, 'vm-fleet'), { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const [name, text] of Object.entries(plainSeedFiles(hostname, seed.sshPubkey))) {
    await writeFile(join(dir, 'vm-fleet', name), text, privately);
  }
  await runTool('genisoimage', [
    '-quiet',
    '-output',
    seed.iso,
    '-volid',
    'cidata',
    '-joliet',
    '-rock',
    dir,
  ]);
  await rm(dir, { recursive: true, force: true });
  await chmod(seed.iso, PRIVATE_FILE_MODE);
  return seed.iso;
}
