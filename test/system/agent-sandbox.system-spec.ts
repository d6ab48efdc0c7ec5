import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_MAIN,
  FLEET_URL,
  VM_HOST_MAIN,
  enrolled,
  eventually,
  getJson,
  stopAllDaemons,
} from '../support/daemons';
import { NotifySocket } from '../support/notify-socket';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * QEMU runs under the agent's unit's restrictions, as near as this machine allows: systemd does
 * not run units here (it is not PID 1), so setpriv starts the built daemons as the units would,
 * as users without a single capability (an empty bounding set), without new privileges, with the
 * unit's UMask, systemd's PATH and a notify socket. The agent, as `nobody` (its unit's vm-host:
 * any unprivileged user with its own state folder) and in group kvm when there is one, enrolls
 * with a controller running as a dynamic user's uid, and a VM created through that controller
 * reaches Running. What setpriv cannot apply (ProtectSystem=, the system call filter, the device
 * policy) systemd-analyze checks in systemd-units.system-spec.ts.
 */
jest.setTimeout(60_000);

const AGENT_UNIT = join(__dirname, '../../deploy/systemd/service-vm-host.service');
const NOBODY = 65534;
/** A uid from systemd's DynamicUser= range (61184-65519), without a passwd entry, like it. */
const DYNAMIC_UID = 61184;
const NODE_ID = 'vm-node-sandbox';
const WG_IP = '127.0.0.2';

const runFolder = tmpdir();
const workDir = scratchFolder('sandbox-');
const diskDir = join(workDir, 'vm-fleet');
const baseImage = join(workDir, 'base.qcow2');

/** A setting of the agent's unit file, e.g. UMask. */
function unitSetting(name: string): string {
  const value = new RegExp(`^${name}=(.*)$`, 'm').exec(readFileSync(AGENT_UNIT, 'utf8'))?.[1];
  if (value === undefined) throw new Error(`${AGENT_UNIT} has no ${name}=`);
  return value;
}

/** The gid of group `name`, or undefined when this machine has no such group. */
function groupId(name: string): number | undefined {
  const entry = spawnSync('getent', ['group', name], { encoding: 'utf8' }).stdout.trim();
  return entry ? Number(entry.split(':')[2]) : undefined;
}

/**
 * The command that runs a daemon as `uid`:`gid` as its unit would: no capability in any set,
 * no new privileges, the supplementary groups given, the unit's umask.
 */
function asUnprivileged(uid: number, gid: number, groups: number[]): string[] {
  return [
    'sh',
    '-c',
    `umask ${unitSetting('UMask')} && exec "$@"`,
    'sh',
    'setpriv',
    `--reuid=${uid}`,
    `--regid=${gid}`,
    ...(groups.length ? [`--groups=${groups.join(',')}`] : ['--clear-groups']),
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

interface ListedVm {
  vm_id: string;
  state: string;
  node_id: string;
}

describe("QEMU under the agent's unit restrictions (setpriv: an unprivileged user, no capability)", () => {
  let notify: NotifySocket;
  const runFolderMode = statSync(runFolder).mode & 0o7777;
  let agent: Daemon;

  beforeAll(async () => {
    // The unprivileged users reach the built daemons (world-readable) and, through the run's
    // folders (search only), their own state folder; as StateDirectory= makes it, it is theirs.
    chmodSync(runFolder, 0o711);
    chmodSync(workDir, 0o711);
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

    const fleet = new Daemon(
      FLEET_MAIN,
      {},
      [],
      [],
      undefined,
      asUnprivileged(DYNAMIC_UID, DYNAMIC_UID, []),
    );
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    expectUnprivileged(fleet.process.pid!, DYNAMIC_UID);

    const kvm = groupId(unitSetting('SupplementaryGroups'));
    agent = new Daemon(
      VM_HOST_MAIN,
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
      asUnprivileged(NOBODY, NOBODY, kvm === undefined ? [] : [kvm]),
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
