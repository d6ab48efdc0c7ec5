import { HostFactsPaths } from '../../host-facts/host-facts.service';
import { HostProcess, ProcessTable } from '../../host-facts/process-table';
import { qemuArgs } from './qemu-command-line';
import { QemuProcesses } from './qemu-processes';

const AGENT_UID = process.getuid!();

/** A process table holding only the processes a test puts in it. */
class FakeTable extends ProcessTable {
  readonly entries = new Map<number, HostProcess & { rssMb?: number }>();
  readonly signalled: Array<[number, NodeJS.Signals]> = [];

  constructor() {
    super(new HostFactsPaths());
  }

  override list(matches: (process: HostProcess) => boolean): Promise<HostProcess[]> {
    return Promise.resolve([...this.entries.values()].filter(matches));
  }

  override get(pid: number): Promise<HostProcess | undefined> {
    return Promise.resolve(this.entries.get(pid));
  }

  override residentMb(pid: number): Promise<number> {
    return Promise.resolve(this.entries.get(pid)?.rssMb ?? 0);
  }
}

const pidFileOf = (vmId: string): string => `/var/lib/vm-fleet/run/${vmId}/qemu.pid`;

/** The command line the agent starts a VM's QEMU with. */
function argsOf(vmId: string, pidFile = pidFileOf(vmId)): string[] {
  return [
    'qemu-system-x86_64',
    ...qemuArgs({
      vmId,
      ramMb: 64,
      vcpuCount: 1,
      accel: 'tcg',
      disk: `/var/lib/vm-fleet/disks/${vmId}.qcow2`,
      seedIso: `/var/lib/vm-fleet/run/${vmId}/seed.iso`,
      qmpSocket: `/var/lib/vm-fleet/run/${vmId}/qmp.sock`,
      pidFile,
      serialLog: `/var/lib/vm-fleet/run/${vmId}/serial.log`,
      forwardAddress: '10.8.0.21',
      forwards: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' as const }],
    }),
  ];
}

describe('QemuProcesses', () => {
  let table: FakeTable;
  let qemus: QemuProcesses;

  beforeEach(() => {
    table = new FakeTable();
    qemus = new QemuProcesses(table, pidFileOf);
  });

  function put(entry: HostProcess & { rssMb?: number }): void {
    table.entries.set(entry.pid, entry);
  }

  it('knows a QEMU the agent started by its user, program, guest name and pidfile', () => {
    const vmId = 'vm-00000000000000a1';
    const ours = {
      pid: 10,
      args: argsOf(vmId),
      uid: AGENT_UID,
      exe: '/usr/bin/qemu-system-x86_64',
    };
    expect(qemus.vmIdOf(ours)).toBe(vmId);
    // The program may not be readable (it is then judged by its command line alone).
    expect(qemus.vmIdOf({ ...ours, exe: undefined })).toBe(vmId);
    // One started before the serial socket, its serial port on a file chardev, all the same.
    const before = ours.args.map((arg) =>
      arg.startsWith('socket,id=serial0,')
        ? `file,id=serial0,path=/var/lib/vm-fleet/run/${vmId}/serial.log,append=on`
        : arg,
    );
    expect(before).not.toEqual(ours.args);
    expect(qemus.vmIdOf({ ...ours, args: before })).toBe(vmId);
  });

  it.each([
    ['another user', { uid: AGENT_UID + 1 }],
    ['an unknown user', { uid: undefined }],
    ['another program', { exe: '/usr/bin/node' }],
    [
      'a command line of another program',
      { args: ['node', ...argsOf('vm-00000000000000a1').slice(1)] },
    ],
    [
      'a pidfile under another VM_DISK_DIR',
      { args: argsOf('vm-00000000000000a1', '/srv/other/qemu.pid') },
    ],
    [
      'no guest name',
      { args: ['qemu-system-x86_64', '-pidfile', pidFileOf('vm-00000000000000a1')] },
    ],
  ])(
    'does not take a process of %s for one of its QEMUs',
    (_what, differs: Partial<HostProcess>) => {
      const ours: HostProcess = {
        pid: 10,
        args: argsOf('vm-00000000000000a1'),
        uid: AGENT_UID,
        exe: '/usr/bin/qemu-system-x86_64',
      };
      expect(qemus.vmIdOf({ ...ours, ...differs })).toBeUndefined();
    },
  );

  it('finds the QEMUs of the VMs asked for, oldest pid first, with their memory together', async () => {
    const exe = '/usr/bin/qemu-system-x86_64';
    put({ pid: 30, args: argsOf('vm-00000000000000a1'), uid: AGENT_UID, exe, rssMb: 40 });
    put({ pid: 20, args: argsOf('vm-00000000000000a1'), uid: AGENT_UID, exe, rssMb: 2 });
    put({ pid: 25, args: argsOf('vm-00000000000000a2'), uid: AGENT_UID, exe });
    put({ pid: 26, args: argsOf('vm-00000000000000a3'), uid: AGENT_UID + 1, exe });
    const found = await qemus.of(['vm-00000000000000a1', 'vm-00000000000000a3']);
    expect([...found.keys()]).toEqual(['vm-00000000000000a1']);
    const processes = found.get('vm-00000000000000a1')!;
    expect(processes.map(({ pid }) => pid)).toEqual([20, 30]);
    expect(await qemus.residentMb(processes)).toBe(42);
  });

  it("sees a pid as alive only while it is that VM's QEMU", async () => {
    put({ pid: 40, args: argsOf('vm-00000000000000a1'), uid: AGENT_UID });
    expect(await qemus.isAlive(40, 'vm-00000000000000a1')).toBe(true);
    expect(await qemus.isAlive(40, 'vm-00000000000000a2')).toBe(false);
    expect(await qemus.isAlive(41, 'vm-00000000000000a1')).toBe(false);
  });

  it('waits until the pids are gone, and names those still there when the time is up', async () => {
    put({ pid: 50, args: argsOf('vm-00000000000000a1'), uid: AGENT_UID });
    put({ pid: 51, args: argsOf('vm-00000000000000a1'), uid: AGENT_UID });
    setTimeout(() => table.entries.delete(50), 20);
    expect(await qemus.survivors([50, 51], 'vm-00000000000000a1', 150)).toEqual([51]);
    table.entries.delete(51);
    expect(await qemus.survivors([50, 51], 'vm-00000000000000a1', 1_000)).toEqual([]);
  });
});
