import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { scratchFolder } from '../support/scratch-folders';

const UNITS = join(__dirname, '../../deploy/systemd');
const COMMANDS = Object.keys(
  (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { bin: object }).bin,
);
/** The daemons: every command but the operators' CLI, which runs and exits. */
const DAEMONS = COMMANDS.filter((command) => command !== 'ppn-fleet');

/** The highest exposure `systemd-analyze security` may give each unit ("OK" is up to 3.9). */
const EXPOSURE_LIMITS: Array<[string, number]> = [
  // A pure network service: nothing of root, no file, no device.
  ['service-vm-fleet.service', 2.0],
  // Its own system user, /dev/kvm, its state folder and QEMU.
  ['service-vm-host.service', 3.0],
];

/** A systemd tool (Debian package systemd); missing, the test fails. */
function systemdAnalyze(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync('systemd-analyze', args, { encoding: 'utf8' });
  if (result.error) {
    throw new Error(
      `systemd-analyze cannot run (${result.error.message}): install Debian's systemd`,
    );
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

/**
 * systemd's own check of a unit as the package installs it: in a root holding this machine's
 * units, the unit beside them, its command at /usr/bin/<command> and the agent's firewall helper
 * under /usr/lib/service-vm-host (stand-ins), so the fixed ExecStart= and ExecStartPre= paths are
 * checked, whether the package is installed here or not.
 */
function verifyInstalled(root: string, unitText: string, unit: string) {
  const systemUnits = ['/usr/lib/systemd/system', '/lib/systemd/system'].find(existsSync)!;
  mkdirSync(join(root, 'usr/lib/systemd'), { recursive: true });
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  // cp -a: the folder holds aliases (symbolic links) that must stay links.
  spawnSync('cp', ['-a', systemUnits, join(root, 'usr/lib/systemd/')]);
  for (const command of COMMANDS) {
    writeFileSync(join(root, 'usr/bin', command), '#!/bin/sh\n');
    chmodSync(join(root, 'usr/bin', command), 0o755);
  }
  // The agent's ExecStartPre=+ helper, where the package puts it.
  const helper = join(root, 'usr/lib/service-vm-host/deploy/systemd/vm-host-guest-firewall');
  mkdirSync(dirname(helper), { recursive: true });
  writeFileSync(helper, '#!/bin/sh\n');
  chmodSync(helper, 0o755);
  writeFileSync(join(root, 'usr/lib/systemd/system', unit), unitText);
  return systemdAnalyze('verify', `--root=${root}`, unit);
}

/** The "Overall exposure level" systemd-analyze security gives a unit file (0 best, 10 worst). */
function exposure(file: string): number {
  const { status, output } = systemdAnalyze('security', '--offline=true', file);
  const level = /Overall exposure level for \S+: (\d+(?:\.\d+)?) /.exec(output)?.[1];
  if (status !== 0 || level === undefined) {
    throw new Error(`systemd-analyze security gave no exposure level:\n${output}`);
  }
  return Number(level);
}

/** Every setting of a unit file: name to values, in order (comments and sections left out). */
function settings(unit: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const line of readFileSync(join(UNITS, unit), 'utf8').split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match) found.set(match[1], [...(found.get(match[1]) ?? []), match[2]]);
  }
  return found;
}

describe('the systemd units', () => {
  const units = readdirSync(UNITS).filter((name) => name.endsWith('.service'));

  it('ship one unit per daemon, none for the CLI', () => {
    expect(COMMANDS).toContain('ppn-fleet');
    expect(units.sort()).toEqual(DAEMONS.map((command) => `${command}.service`).sort());
  });

  it.each(units)(
    '%s passes systemd-analyze verify without a single remark, installed as the package installs it',
    (unit) => {
      const text = readFileSync(join(UNITS, unit), 'utf8');
      expect(verifyInstalled(scratchFolder('root-'), text, unit)).toEqual({
        status: 0,
        output: '',
      });
    },
  );

  it.each(units)(
    '%s starts its command where the package puts it, with its /etc/default file',
    (unit) => {
      const command = unit.replace(/\.service$/, '');
      const unitSettings = settings(unit);
      expect(unitSettings.get('ExecStart')).toEqual([`/usr/bin/${command}`]);
      expect(unitSettings.get('EnvironmentFile')).toEqual([
        `-/etc/default/${command.replace(/^service-/, '')}`,
      ]);
    },
  );

  it('would catch a unit that calls its command at a path the package does not use', () => {
    const text = readFileSync(join(UNITS, 'service-vm-host.service'), 'utf8').replace(
      'ExecStart=/usr/bin/service-vm-host',
      'ExecStart=/usr/local/bin/service-vm-host',
    );
    const { status, output } = verifyInstalled(
      scratchFolder('root-'),
      text,
      'service-vm-host.service',
    );
    expect(status).not.toBe(0);
    expect(output).toContain('/usr/local/bin/service-vm-host');
  });

  it.each(EXPOSURE_LIMITS)(
    '%s scores at most %s in systemd-analyze security --offline=true',
    (unit, limit) => {
      expect(exposure(join(UNITS, unit))).toBeLessThanOrEqual(limit);
    },
  );

  it('would catch a unit that lost its sandbox: the agent unfenced scores above 9', () => {
    const text = readFileSync(join(UNITS, 'service-vm-host.service'), 'utf8');
    const unfenced = join(scratchFolder('unfenced-'), 'service-vm-host.service');
    writeFileSync(
      unfenced,
      text.slice(0, text.indexOf('# Sandbox')) + text.slice(text.indexOf('[Install]')),
    );
    expect(exposure(unfenced)).toBeGreaterThan(9);
  });

  it('the controller runs as a dynamic user with nothing of root', () => {
    const fleet = settings('service-vm-fleet.service');
    expect(fleet.get('DynamicUser')).toEqual(['yes']);
    expect(fleet.get('CapabilityBoundingSet')).toEqual(['']);
    expect(fleet.get('PrivateDevices')).toEqual(['yes']);
  });

  it('the agent runs as vm-host in group kvm, with /dev/kvm, /var/lib/vm-fleet and its VMs kept on restart', () => {
    const agent = settings('service-vm-host.service');
    expect(agent.get('User')).toEqual(['vm-host']);
    expect(agent.get('Group')).toEqual(['vm-host']);
    expect(agent.get('SupplementaryGroups')).toEqual(['kvm']);
    expect(agent.get('StateDirectory')).toEqual(['vm-fleet']);
    expect(agent.get('DeviceAllow')).toEqual(['/dev/kvm rw']);
    expect(agent.get('KillMode')).toEqual(['process']);
    // PrivateDevices= would hide /dev/kvm.
    expect(agent.has('PrivateDevices')).toBe(false);
    // genisoimage calls setreuid(-1, getuid()) and panics if it may not (@privileged, @setuid).
    expect(agent.get('SystemCallFilter')).toEqual(['@system-service']);
    expect(agent.get('CapabilityBoundingSet')).toEqual(['']);
  });

  it.each(units)(
    '%s is Type=notify, runs JavaScript (no MemoryDenyWriteExecute) and waits for any network, not one WireGuard interface',
    (unit) => {
      const unitSettings = settings(unit);
      expect(unitSettings.get('Type')).toEqual(['notify']);
      // systemd-notify, a child of the daemon, sends READY=1 (libs/daemon service-readiness.ts).
      expect(unitSettings.get('NotifyAccess')).toEqual(['all']);
      // V8's JIT writes machine code into writable, executable memory.
      expect(unitSettings.has('MemoryDenyWriteExecute')).toBe(false);
      expect(unitSettings.get('After')).toEqual(['network-online.target']);
      expect(unitSettings.get('Wants')).toEqual(['network-online.target']);
    },
  );
});
