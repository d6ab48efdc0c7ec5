import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  stopAllDaemons,
} from '../support/daemons';
import { NotifySocket } from '../support/notify-socket';
import { liveQemusUnder } from '../support/qemu-processes';
import { copyBuiltDaemons } from '../support/readable-build';
import { scratchFolder } from '../support/scratch-folders';

/**
 * QEMU runs under the agent's unit's restrictions, as near as this machine allows: systemd does
 * not run units here (it is not PID 1), so the built daemons start as their units would start
 * them, from the units' own settings: every file system read-only but the state folder
 * (ProtectSystem=strict, StateDirectory=), a proc showing the user's processes alone
 * (ProtectProc=, ProcSubset=), and through setpriv an unprivileged user in its groups, without a
 * single capability (an empty bounding set), without new privileges, with the unit's UMask,
 * systemd's PATH and a notify socket. The agent runs as `nobody` (its unit's vm-host: any
 * unprivileged user with its own state folder), in group kvm when there is one; the controller as
 * a dynamic user's uid. A VM created through the controller reaches Running. What this cannot
 * apply (the system call filter, the device policy, the address families) systemd-analyze checks
 * in systemd-units.system-spec.ts.
 */
jest.setTimeout(60_000);

const UNITS = join(__dirname, '../../deploy/systemd');
const NOBODY = 65534;
/** A uid from systemd's DynamicUser= range (61184-65519), without a passwd entry, like it. */
const DYNAMIC_UID = 61184;
const NODE_ID = 'vm-node-sandbox';
const WG_IP = '127.0.0.2';

const runFolder = tmpdir();
const workDir = scratchFolder('sandbox-');
const diskDir = join(workDir, 'vm-fleet');
const baseImage = join(workDir, 'base.qcow2');

/** What a unit's sandbox comes to, for setpriv, mount and proc to apply. */
interface Sandbox {
  uid: number;
  gid: number;
  /** SupplementaryGroups=. */
  groups: number[];
  /** UMask=. */
  umask: string;
  /** ProtectProc= and ProcSubset=, as options of a proc mount. */
  proc: string;
  /** Left writable by ProtectSystem=strict: StateDirectory=, and the stand-in for PrivateTmp=. */
  writable: string[];
}

/** A setting of a unit file, e.g. UMask; undefined when the unit does not set it. */
function unitSetting(unit: string, name: string): string | undefined {
  return new RegExp(`^${name}=(.*)$`, 'm').exec(readFileSync(join(UNITS, unit), 'utf8'))?.[1];
}

/** The sandbox of `unit` for a user, the parts setpriv, mount and proc can apply. */
function sandboxOf(unit: string, uid: number, gid: number, writable: string[] = []): Sandbox {
  const setting = (name: string): string => {
    const value = unitSetting(unit, name);
    if (value === undefined) throw new Error(`${unit} has no ${name}=`);
    return value;
  };
  expect(setting('ProtectSystem')).toBe('strict');
  expect(setting('CapabilityBoundingSet')).toBe('');
  expect(setting('NoNewPrivileges')).toBe('yes');
  const subset = unitSetting(unit, 'ProcSubset');
  const supplementary = unitSetting(unit, 'SupplementaryGroups');
  const groups = supplementary === undefined ? undefined : groupId(supplementary);
  return {
    uid,
    gid,
    groups: groups === undefined ? [] : [groups],
    umask: setting('UMask'),
    proc: `hidepid=${setting('ProtectProc')}${subset ? `,subset=${subset}` : ''}`,
    writable,
  };
}

/** The gid of group `name`, or undefined when this machine has no such group. */
function groupId(name: string): number | undefined {
  const entry = spawnSync('getent', ['group', name], { encoding: 'utf8' }).stdout.trim();
  return entry ? Number(entry.split(':')[2]) : undefined;
}

/**
 * The command that runs a daemon as its unit would, as near as no systemd allows: in a mount
 * namespace of its own where every file system is read-only but `writable` (ProtectSystem=strict;
 * /dev, /proc and /sys are the kernel's), its own proc mount (ProtectProc=, ProcSubset=), then
 * through setpriv: the user, its groups, no capability in any set, no new privileges, the umask.
 */
function asTheUnitWould(sandbox: Sandbox): string[] {
  const keep = ['/proc', '/proc/*', '/sys', '/sys/*', '/dev', '/dev/*'].concat(
    sandbox.writable.map((path) => `'${path}'`),
  );
  const script = [
    'set -e',
    `mount -t proc -o ${sandbox.proc} proc /proc`,
    ...sandbox.writable.map((path) => `mount --bind '${path}' '${path}'`),
    'findmnt -rno TARGET | while read -r target; do',
    `  case "$target" in ${keep.join('|')}) continue ;; esac`,
    '  mount -o remount,bind,ro "$target"',
    'done',
    `umask ${sandbox.umask}`,
    'exec "$@"',
  ].join('\n');
  return [
    'unshare',
    '--mount',
    '--propagation',
    'private',
    'sh',
    '-c',
    script,
    'sh',
    'setpriv',
    `--reuid=${sandbox.uid}`,
    `--regid=${sandbox.gid}`,
    ...(sandbox.groups.length ? [`--groups=${sandbox.groups.join(',')}`] : ['--clear-groups']),
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
  ];
}

/** What /proc/<pid>/status says of a process: its uids, capability sets, no_new_privs. */
function processStatus(pid: number): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const [name, value] = line.split(':\t');
    if (value !== undefined) fields[name] = value.trim();
  }
  return fields;
}

function expectUnprivileged(pid: number, uid: number): void {
  const status = processStatus(pid);
  expect(status.Uid.split('\t')).toEqual([uid, uid, uid, uid].map(String));
  for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
    expect([set, status[set]]).toEqual([set, '0000000000000000']);
  }
  expect(status.NoNewPrivs).toBe('1');
}

/**
 * Whether a process sees what its sandbox makes of the file systems: `/` read-only, `writable`
 * writable, and its proc mounted with `proc`'s options.
 */
function expectSandboxedMounts(pid: number, sandbox: Sandbox): void {
  const mounts = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [mine, kernel] = line.split(' - ');
      const [, , , , target, options] = mine.split(' ');
      return { target, options: options.split(','), superOptions: kernel.split(' ')[2] };
    });
  const last = (target: string) => mounts.filter((mount) => mount.target === target).at(-1);
  expect(last('/')?.options).toContain('ro');
  for (const path of sandbox.writable)
    expect({ path, options: last(path)?.options }).toEqual({
      path,
      options: expect.arrayContaining(['rw']),
    });
  expect(last('/proc')?.superOptions.split(',')).toEqual(
    expect.arrayContaining(sandbox.proc.split(',')),
  );
}

interface ListedVm {
  vm_id: string;
  state: string;
  node_id: string;
}

describe("QEMU under the agent's unit restrictions (read-only system, own proc, setpriv: an unprivileged user without capabilities)", () => {
  let notify: NotifySocket;
  const runFolderMode = statSync(runFolder).mode & 0o7777;
  let agent: Daemon;
  let agentSandbox: Sandbox;

  beforeAll(async () => {
    // The unprivileged users reach, through the run's folders (search only), a copy of the built
    // daemons (world-readable: the checkout may sit in a private folder, e.g. a clone in /root)
    // and their own state folder; as StateDirectory= makes it, it is theirs.
    chmodSync(runFolder, 0o711);
    chmodSync(workDir, 0o711);
    const { fleetMain, vmHostMain } = copyBuiltDaemons(join(workDir, 'app'));
    mkdirSync(diskDir, { mode: 0o700 });
    chownSync(diskDir, NOBODY, NOBODY);
    const agentTmp = join(workDir, 'tmp');
    mkdirSync(agentTmp, { mode: 0o700 });
    chownSync(agentTmp, NOBODY, NOBODY);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    chmodSync(baseImage, 0o644);
    notify = new NotifySocket(join(workDir, 'notify'));
    await notify.listening();
    // systemd's own notify socket is writable by every service.
    chmodSync(notify.path, 0o777);

    const fleetSandbox = sandboxOf('service-vm-fleet.service', DYNAMIC_UID, DYNAMIC_UID);
    const fleet = new Daemon(fleetMain, {}, [], [], undefined, asTheUnitWould(fleetSandbox));
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    expectUnprivileged(fleet.process.pid!, DYNAMIC_UID);
    expectSandboxedMounts(fleet.process.pid!, fleetSandbox);

    agentSandbox = sandboxOf('service-vm-host.service', NOBODY, NOBODY, [diskDir, agentTmp]);
    agent = new Daemon(
      vmHostMain,
      {
        // What systemd gives the unit: its default PATH, the user's name and home, the state
        // folder, the notify socket; then /etc/default/vm-host's variables.
        PATH: spawnSync('systemd-path', ['search-binaries-default'], {
          encoding: 'utf8',
        }).stdout.trim(),
        USER: 'nobody',
        LOGNAME: 'nobody',
        HOME: '/nonexistent',
        TMPDIR: agentTmp,
        STATE_DIRECTORY: diskDir,
        NOTIFY_SOCKET: notify.path,
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE_ID,
        VM_WG_IP: WG_IP,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: diskDir,
        VM_BASE_IMAGE: baseImage,
      },
      [],
      [],
      undefined,
      asTheUnitWould(agentSandbox),
    );
    await enrolled(agent);
  });

  afterAll(async () => {
    await stopAllDaemons();
    notify?.close();
    chmodSync(runFolder, runFolderMode);
  });

  it('the agent runs as its user without any capability, says READY=1, enrolls; a VM created through the controller reaches Running in a QEMU as unprivileged', async () => {
    expectUnprivileged(agent.process.pid!, NOBODY);
    expectSandboxedMounts(agent.process.pid!, agentSandbox);
    expect(await notify.ready()).toContain(`STATUS=node ${NODE_ID} listening on ${WG_IP}:9204`);

    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vm_type: 'sandboxed', ram_mb: 64, vcpu_count: 1, prefer_kvm: false }),
    });
    const created = (await response.json()) as ListedVm;
    expect([response.status, created.node_id]).toEqual([201, NODE_ID]);
    await eventually(
      `${created.vm_id} Running`,
      async () =>
        (await getJson<ListedVm[]>('/v1/vms')).find(
          (vm) => vm.vm_id === created.vm_id && vm.state === 'Running',
        ),
      20_000,
    );

    const [qemu] = liveQemusUnder(diskDir);
    expect(qemu.args).toContain(`guest=${created.vm_id}`);
    expectUnprivileged(qemu.pid, NOBODY);
    expectSandboxedMounts(qemu.pid, agentSandbox);
    // NOTIFY_SOCKET was the agent's alone: QEMU does not speak for the unit.
    const qemuEnvironment = readFileSync(`/proc/${qemu.pid}/environ`, 'utf8').split('\0');
    expect(qemuEnvironment.filter((entry) => entry.startsWith('NOTIFY_SOCKET='))).toEqual([]);

    // Everything it made is the agent user's own, private (the unit's UMask).
    const made = readdirSync(diskDir, { recursive: true, encoding: 'utf8' }).map((entry) =>
      join(diskDir, entry),
    );
    expect(made.length).toBeGreaterThan(0);
    for (const path of made) {
      const { uid, mode } = statSync(path);
      expect([path, uid, mode & 0o077]).toEqual([path, NOBODY, 0]);
    }

    expect((await fetch(`${FLEET_URL}/v1/vms/${created.vm_id}`, { method: 'DELETE' })).status).toBe(
      204,
    );
    await eventually(
      'its QEMU gone',
      () => Promise.resolve(liveQemusUnder(diskDir).length === 0 ? true : undefined),
      10_000,
    );
  });
});
