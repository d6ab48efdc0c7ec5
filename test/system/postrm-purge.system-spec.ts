import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const POSTRM = join(__dirname, '../../deploy/packaging/service-vm-host/postrm');

/**
 * `VM_FLEET_PURGE_DISKS=1 apt purge service-vm-host` runs the agent's postrm: it removes
 * /var/lib/vm-fleet only once nothing may still use it. Run here as dpkg runs it, as root, in a
 * mount namespace of its own whose /var/lib, /etc/default, /etc/systemd/system and /run/systemd
 * are empty tmpfs: what it removes is the test's, never this machine's.
 */
function purge(setUp: string): { status: number | null; stderr: string; left: string } {
  const script = [
    'set -e',
    'for dir in /var/lib /etc/default /etc/systemd/system /run/systemd; do mount -t tmpfs none "$dir"; done',
    'mkdir -p /var/lib/vm-fleet/disks /var/lib/vm-fleet/run /var/lib/vm-fleet/deleted',
    'echo qcow2 > /var/lib/vm-fleet/disks/vm-00000000000000f1.qcow2',
    setUp,
    `VM_FLEET_PURGE_DISKS=1 sh ${POSTRM} purge`,
    'if [ -d /var/lib/vm-fleet ]; then echo kept; else echo removed; fi',
  ].join('\n');
  const run = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: run.status, stderr: run.stderr, left: run.stdout.trim() };
}

describe('service-vm-host postrm purge with VM_FLEET_PURGE_DISKS=1', () => {
  let qemu: ChildProcess | undefined;

  afterEach(() => {
    qemu?.kill('SIGKILL');
    qemu = undefined;
  });

  it('removes /var/lib/vm-fleet when no VM is left and no QEMU uses it', () => {
    expect(purge('true')).toEqual({ status: 0, stderr: '', left: 'removed' });
  });

  it('keeps a disk without a run folder that a live QEMU still runs on, naming its pid', async () => {
    // A QEMU as the agent starts one (argv[0] qemu-system-x86_64), on a disk under the folder.
    qemu = spawn(
      process.execPath,
      [
        '-e',
        'setInterval(() => {}, 1000)',
        'file=/var/lib/vm-fleet/disks/vm-00000000000000f1.qcow2',
      ],
      { argv0: 'qemu-system-x86_64', stdio: 'ignore' },
    );
    await new Promise((resolve) => qemu!.once('spawn', resolve));
    const { status, stderr, left } = purge('true');
    expect(status).toBe(0);
    expect(left).toBe('kept');
    expect(stderr).toContain(
      `service-vm-host: VM_FLEET_PURGE_DISKS=1, but QEMU still runs on disks in /var/lib/vm-fleet (pid ${qemu.pid})`,
    );
  });

  it('keeps the folder while a VM has a run folder', () => {
    const { left, stderr } = purge('mkdir /var/lib/vm-fleet/run/vm-00000000000000f2');
    expect(left).toBe('kept');
    expect(stderr).toContain('VMs are left: vm-00000000000000f2');
  });
});
