import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../vm-files';
import { runTool } from './run-tool';

/** cloud-init NoCloud user-data; JSON is valid YAML, so no value can break out of its field. */
export function cloudInitUserData(vmType: string, sshPubkey?: string): string {
  const config: Record<string, unknown> = { hostname: vmType, preserve_hostname: false };
  if (sshPubkey) config.ssh_authorized_keys = [sshPubkey];
  return `#cloud-config\n${JSON.stringify(config, null, 2)}\n`;
}

/** cloud-init NoCloud meta-data: the vm_id the agent made, and the VM's type as its hostname. */
export function cloudInitMetaData(vmId: string, vmType: string): string {
  return `instance-id: ${vmId}\nlocal-hostname: ${vmType}\n`;
}

/** What a VM's seed ISO tells cloud-init, and where it goes. */
export interface SeedIso {
  vmId: string;
  vmType: string;
  sshPubkey?: string;
  /** The VM's run folder: the files are written in a `cidata` folder there, then removed. */
  workDir: string;
  /** The ISO to make, private to the agent. */
  iso: string;
}

/** Makes the NoCloud seed ISO (volume `cidata`) with genisoimage; nothing else is left behind. */
export async function makeSeedIso(seed: SeedIso): Promise<string> {
  const dir = join(seed.workDir, 'cidata');
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const privately = { mode: PRIVATE_FILE_MODE };
  await writeFile(join(dir, 'meta-data'), cloudInitMetaData(seed.vmId, seed.vmType), privately);
  await writeFile(
    join(dir, 'user-data'),
    cloudInitUserData(seed.vmType, seed.sshPubkey),
    privately,
  );
  await runTool('genisoimage', [
    '-quiet',
    '-output',
    seed.iso,
    '-volid',
    'cidata',
    '-joliet',
    '-rock',
    join(dir, 'user-data'),
    join(dir, 'meta-data'),
  ]);
  await rm(dir, { recursive: true, force: true });
  await chmod(seed.iso, PRIVATE_FILE_MODE);
  return seed.iso;
}
