import { Logger } from '@nestjs/common';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../../test/support/configs';
import { HostFactsPaths, HostFactsService } from '../../host-facts/host-facts.service';
import { HostProcess, ProcessTable } from '../../host-facts/process-table';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { VmFiles } from '../files/vm-files';
import { VmCreateError, VmCreationUnavailableError, VmPortTakenError } from '../vms.errors';
import { AddressInfo, Server, createServer } from 'node:net';
import { GuestIsolation } from '../network/guest-isolation';
import { KvmStarts } from './kvm-starts';
import { qemuArgs } from './qemu-command-line';
import { SOCKET_PORT_PROBE } from '../ports/port-probe';
import * as tools from './run-tool';
import { QemuDriver } from './qemu.driver';
import { SERIAL_LOG_MAX_BYTES } from './qemu-record';
import { MAX_CONSOLE_BYTES } from '@app/fleet-domain';

/** QEMU started as it is, in no cgroup: a unit test sets up no firewall. */
const enclose = jest.fn((_vmId: string, _pids: readonly number[]) => Promise.resolve());
const NO_FIREWALL = {
  guestCommand: (command: string, args: string[]) => Promise.resolve({ command, args }),
  enclose,
} as unknown as GuestIsolation;

describe('QemuDriver', () => {
  let root: string;
  let kvmDevice: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-driver-'));
    kvmDevice = join(root, 'kvm');
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  let hostFacts: HostFactsService;

  function driver(
    baseImage?: string,
    diskDir = root,
    env: Record<string, string> = {},
  ): QemuDriver {
    const config = vmHostConfig({
      VM_DISK_DIR: diskDir,
      ...(baseImage === undefined ? {} : { VM_BASE_IMAGE: baseImage }),
      VM_WG_IP: '127.0.0.1',
      ...env,
    });
    const paths = Object.assign(new HostFactsPaths(), { kvmDevice });
    hostFacts = new HostFactsService(paths, config);
    return new QemuDriver(
      config,
      new VmFiles(config),
      hostFacts,
      new ProcessTable(paths),
      new CrashFailpoint(config),
      NO_FIREWALL,
    );
  }

  async function preparedFiles(): Promise<VmFiles> {
    const files = new VmFiles(vmHostConfig({ VM_DISK_DIR: root }));
    await files.prepare();
    return files;
  }

  it('refuses to plan a VM when VM_BASE_IMAGE does not exist, naming it', async () => {
    await expect(driver(join(root, 'nope.qcow2')).plan({ preferKvm: false })).rejects.toThrow(
      new VmCreationUnavailableError(
        `VM_BASE_IMAGE ${join(root, 'nope.qcow2')} does not exist or is not readable`,
      ),
    );
  });

  it('plans KVM whenever /dev/kvm is usable, prefer_kvm or not (VM_ACCEL=auto), else TCG', async () => {
    const base = join(root, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', base, '1M']);
    const qemu = driver(base);
    expect(await qemu.plan({ preferKvm: true })).toEqual({
      record: { kind: 'qemu', accel: 'tcg', pid: null },
      summary: 'tcg',
    });
    await writeFile(kvmDevice, '');
    for (const preferKvm of [false, true]) {
      expect(await qemu.plan({ preferKvm })).toEqual({
        record: { kind: 'qemu', accel: 'kvm', pid: null },
        summary: 'kvm',
      });
    }
    expect(qemu.accel({ kind: 'qemu', accel: 'kvm', pid: null })).toBe('kvm');
  });

  it('plans TCG under VM_ACCEL=tcg though KVM is usable, and refuses every VM under VM_ACCEL=kvm without KVM', async () => {
    const base = join(root, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', base, '1M']);
    await expect(driver(base, root, { VM_ACCEL: 'kvm' }).plan({ preferKvm: true })).rejects.toThrow(
      new VmCreationUnavailableError(
        'VM_ACCEL=kvm and KVM cannot be used on this node (its device cannot be opened read-write); no VM can be made',
      ),
    );
    await writeFile(kvmDevice, '');
    expect((await driver(base, root, { VM_ACCEL: 'tcg' }).plan({ preferKvm: true })).summary).toBe(
      'tcg',
    );
    expect((await driver(base, root, { VM_ACCEL: 'kvm' }).plan({ preferKvm: false })).summary).toBe(
      'kvm',
    );
  });

  it('cuts a console log grown past 8 MiB to its last 1 MiB, and leaves a smaller one alone', async () => {
    const files = await preparedFiles();
    const vmId = 'vm-00000000000000c1';
    await mkdir(files.runDir(vmId));
    const qemu = driver(undefined);
    const log = qemu.consoleLog(vmId);
    await writeFile(log, 'small\n');
    await qemu.capConsoleLog(vmId);
    expect(await readFile(log, 'utf8')).toBe('small\n');
    const tail = 'the last line\n';
    await writeFile(
      log,
      Buffer.concat([Buffer.alloc(SERIAL_LOG_MAX_BYTES, 'x'), Buffer.from(tail)]),
    );
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    await qemu.capConsoleLog(vmId);
    expect(warn).toHaveBeenCalledWith(
      `vm ${vmId}: console log cut from ${SERIAL_LOG_MAX_BYTES + tail.length} bytes to its last ${MAX_CONSOLE_BYTES} bytes`,
    );
    const cut = await readFile(log, 'utf8');
    expect(cut).toHaveLength(MAX_CONSOLE_BYTES);
    expect(cut.endsWith(`x${tail}`)).toBe(true);
  });

  it('fails making the files at the disk step when the base image is not a qcow2 image', async () => {
    const files = await preparedFiles();
    const notAnImage = join(root, 'not-an-image.qcow2');
    await writeFile(notAnImage, 'this is not a qcow2 image\n');
    const vmId = await files.newVmId();
    const failure = driver(notAnImage)
      .makeFiles({ vmId, vmType: 'web', ramMb: 64, vcpuCount: 1 })
      .catch((error: unknown) => error);
    const error = await failure;
    expect(error).toBeInstanceOf(VmCreateError);
    expect(error).toMatchObject({
      step: 'disk',
      message: expect.stringMatching(/^qemu-img failed: /),
    });
    expect(await readdir(files.runDir(vmId))).toEqual([]);
  });

  it('refuses a VM_DISK_DIR under which QMP socket paths would be too long', () => {
    expect(() => driver(undefined, `/${'d'.repeat(60)}`).checkDiskDir()).not.toThrow();
    expect(() => driver(undefined, `/${'d'.repeat(80)}`).checkDiskDir()).toThrow(
      'too long: QMP socket paths under it would exceed 107 bytes',
    );
  });

  describe('when QEMU fails to start', () => {
    const MSR_FAILURE =
      'qemu-system-x86_64 failed: qemu-system-x86_64: error: failed to set MSR 0x48f to 0x7fefff00036dfb';

    /** qemu-system-x86_64 fails as a broken KVM makes it fail, whatever it is asked. */
    beforeEach(() => {
      jest.spyOn(tools, 'runTool').mockRejectedValue(new Error(MSR_FAILURE));
    });

    async function started(
      accel: 'kvm' | 'tcg',
      env: Record<string, string> = {},
    ): Promise<unknown> {
      const files = await preparedFiles();
      const vmId = await files.newVmId();
      return driver(undefined, root, env)
        .start({ vmId, vmType: 'web', ramMb: 64, vcpuCount: 1 }, { kind: 'qemu', accel, pid: null })
        .catch((error: unknown) => error);
    }

    it('under TCG, is a plain create failure', async () => {
      const error = await started('tcg');
      expect(error).toBeInstanceOf(VmCreateError);
      expect(error).toMatchObject({ step: 'QEMU', message: expect.stringContaining('MSR') });
    });

    it('under every KVM CPU model and TCG too, is a plain create failure: KVM not blamed', async () => {
      await writeFile(kvmDevice, '');
      const error = await started('kvm');
      expect(error).toBeInstanceOf(VmCreateError);
      expect(error).toMatchObject({ step: 'QEMU', message: MSR_FAILURE });
      expect(tools.runTool).toHaveBeenCalledTimes(4);
      expect(await hostFacts.kvmUsable()).toBe(true);
    });

    it('under VM_ACCEL=kvm, fails with the reason and tries no TCG', async () => {
      await writeFile(kvmDevice, '');
      const error = await started('tcg', { VM_ACCEL: 'kvm' });
      expect(error).toBeInstanceOf(VmCreateError);
      expect((error as Error).message).toBe(
        `could not start under KVM: host: ${MSR_FAILURE}; host,-arch-capabilities: ${MSR_FAILURE}; qemu64: ${MSR_FAILURE}; VM_ACCEL=kvm: not started under TCG`,
      );
      const runs = jest.mocked(tools.runTool).mock.calls.map(([, args]) => args);
      expect(runs.map((args) => args[args.indexOf('-machine') + 1])).toEqual(
        Array(3).fill('q35,accel=kvm'),
      );
    });
  });

  describe('when KVM fails to start a VM (a fake qemu-system-x86_64)', () => {
    /** QEMU aborts under KVM with these CPU models; otherwise it "daemonizes" (writes its pidfile). */
    function fakeRunner(failingModels: readonly string[]): void {
      jest.spyOn(tools, 'runTool').mockImplementation(async (_tool, args) => {
        const cpu = args.includes('-cpu') ? args[args.indexOf('-cpu') + 1] : null;
        if (cpu !== null && failingModels.includes(cpu)) {
          throw new Error('qemu-system-x86_64 failed: error: failed to set MSR 0x10a to 0x69');
        }
        await writeFile(args[args.indexOf('-pidfile') + 1], `${process.pid}\n`);
        // Where QEMU's QMP socket would be (nothing answers on it).
        await writeFile(/^unix:([^,]+),/.exec(args[args.indexOf('-qmp') + 1])![1], '');
        return '';
      });
    }

    function cpusTried(): Array<string | null> {
      return jest
        .mocked(tools.runTool)
        .mock.calls.map(([, args]) =>
          args.includes('-cpu') ? args[args.indexOf('-cpu') + 1] : null,
        );
    }

    async function start(qemu: QemuDriver) {
      const files = await preparedFiles();
      const vmId = await files.newVmId();
      const spec = { vmId, vmType: 'web', ramMb: 64, vcpuCount: 1 };
      return { vmId, started: await qemu.start(spec, { kind: 'qemu', accel: 'kvm', pid: null }) };
    }

    let warnings: string[];
    beforeEach(async () => {
      await writeFile(kvmDevice, '');
      warnings = [];
      jest
        .spyOn(Logger.prototype, 'warn')
        .mockImplementation((message: unknown) => void warnings.push(String(message)));
    });

    it('tries host, host,-arch-capabilities, qemu64, then TCG on the same port, and marks KVM failed', async () => {
      fakeRunner(['host', 'host,-arch-capabilities', 'qemu64']);
      const qemu = driver();
      const { vmId, started } = await start(qemu);
      expect(cpusTried()).toEqual(['host', 'host,-arch-capabilities', 'qemu64', null]);
      expect(started.record).toEqual({ kind: 'qemu', accel: 'tcg', pid: process.pid });
      expect(started.accelFallback).toMatch(
        /^QEMU: could not start under KVM: host: .*MSR 0x10a.*; qemu64: .*; started under TCG$/,
      );
      expect(await hostFacts.kvmUsable()).toBe(false);
      expect(warnings).toEqual([
        expect.stringMatching(
          new RegExp(
            `^vm ${vmId}: QEMU: could not start under KVM: .*; starting it again under TCG$`,
          ),
        ),
        expect.stringMatching(
          new RegExp(`^node .*: KVM failed at run time: vm ${vmId}: could not start under KVM`),
        ),
      ]);
      // Later VMs start under TCG at once.
      jest.mocked(tools.runTool).mockClear();
      expect((await start(qemu)).started.record).toMatchObject({ accel: 'tcg' });
      expect(cpusTried()).toEqual([null]);
    });

    it('starts a VM under KVM with the host CPU where /dev/kvm is usable (VM_ACCEL=auto)', async () => {
      fakeRunner([]);
      const qemu = driver();
      const { started } = await start(qemu);
      const [[tool, args]] = jest.mocked(tools.runTool).mock.calls;
      expect(tool).toBe('qemu-system-x86_64');
      expect(args.slice(args.indexOf('-machine'), args.indexOf('-machine') + 4)).toEqual([
        '-machine',
        'q35,accel=kvm',
        '-cpu',
        'host',
      ]);
      expect(started.record).toEqual({ kind: 'qemu', accel: 'kvm', pid: process.pid });
      expect(qemu.accel(started.record)).toBe('kvm');
    });

    it('remembers the CPU model that started, so later VMs do not try the failing ones again', async () => {
      fakeRunner(['host']);
      const qemu = driver();
      const first = await start(qemu);
      expect(first.started.record).toMatchObject({ accel: 'kvm' });
      expect(first.started.summary).toContain('kvm (CPU host,-arch-capabilities)');
      expect(cpusTried()).toEqual(['host', 'host,-arch-capabilities']);
      jest.mocked(tools.runTool).mockClear();
      await start(qemu);
      expect(cpusTried()).toEqual(['host,-arch-capabilities']);
      expect(await hostFacts.kvmUsable()).toBe(true);
    });
  });

  describe("a VM's own forwards", () => {
    let listener: Server | undefined;

    afterEach(async () => {
      if (listener) await new Promise((resolve) => listener!.close(resolve));
      listener = undefined;
    });

    it('are all forwarded from VM_WG_IP, tcp and udp, exactly as admitted', async () => {
      const runTool = jest.spyOn(tools, 'runTool').mockRejectedValue(new Error('stop here'));
      const files = await preparedFiles();
      const vmId = await files.newVmId();
      // Free on this machine now, whatever else runs beside the test.
      const [ssh, http, dns] = [
        await SOCKET_PORT_PROBE.anyFree('127.0.0.1', 'tcp'),
        await SOCKET_PORT_PROBE.anyFree('127.0.0.1', 'tcp'),
        await SOCKET_PORT_PROBE.anyFree('127.0.0.1', 'udp'),
      ];
      const forwards = [
        { host_port: ssh, guest_port: 22, protocol: 'tcp' as const },
        { host_port: http, guest_port: 8080, protocol: 'tcp' as const },
        { host_port: dns, guest_port: 53, protocol: 'udp' as const },
      ];
      await driver()
        .start(
          { vmId, vmType: 'web', ramMb: 64, vcpuCount: 1, forwards },
          { kind: 'qemu', accel: 'tcg', pid: null },
        )
        .catch(() => undefined);
      const args = runTool.mock.calls[0][1];
      expect(args[args.indexOf('-netdev') + 1]).toBe(
        `user,id=net0,hostfwd=tcp:127.0.0.1:${ssh}-:22,hostfwd=tcp:127.0.0.1:${http}-:8080,hostfwd=udp:127.0.0.1:${dns}-:53`,
      );
    });

    it('one taken by another process fails the start naming it, QEMU never run', async () => {
      const runTool = jest.spyOn(tools, 'runTool');
      listener = createServer();
      await new Promise<void>((resolve) => listener!.listen(0, '127.0.0.1', resolve));
      const taken = (listener.address() as AddressInfo).port;
      const files = await preparedFiles();
      const vmId = await files.newVmId();
      const error = await driver()
        .start(
          {
            vmId,
            vmType: 'web',
            ramMb: 64,
            vcpuCount: 1,
            forwards: [{ host_port: taken, guest_port: 22, protocol: 'tcp' }],
          },
          { kind: 'qemu', accel: 'tcg', pid: null },
        )
        .catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(VmPortTakenError);
      expect(error).toMatchObject({
        step: 'ports',
        message: expect.stringContaining(`host port ${taken}/tcp on 127.0.0.1`),
      });
      expect(runTool).not.toHaveBeenCalled();
    });
  });

  it('sees a VM whose pid is missing, or is not its QEMU, as stopped, and stopping it signals nothing', async () => {
    const kill = jest.spyOn(process, 'kill');
    const qemu = driver();
    const vmId = 'vm-0123456789abcdef';
    for (const record of [
      { kind: 'qemu', accel: 'tcg', pid: null },
      { kind: 'qemu', accel: 'tcg', pid: process.pid },
      { kind: 'qemu', accel: 'tcg', pid: '1; rm -rf /' },
      { kind: 'firecracker', pid: process.pid },
    ]) {
      expect(await qemu.inspect(vmId, record)).toBe('stopped');
      await qemu.stop(vmId, record);
    }
    expect(kill).not.toHaveBeenCalled();
  });
});

/**
 * A process that looks like a QEMU the driver started (same command line), but is a small
 * node script: with `ignoreTerm` it ignores SIGTERM too; with QMP_STATUS it answers QMP on its
 * socket as QEMU does (query-status with that status, cont and system_reset changing it; quit
 * ends it), else it never answers.
 */
const FAKE_QEMU = `
if (process.env.IGNORE_TERM) process.on('SIGTERM', () => {});
let status = process.env.QMP_STATUS;
let presses = 0;
const ready = () => process.stdout.write('ready\\n');
if (status) {
  const socketPath = /^unix:([^,]+),/.exec(process.argv[process.argv.indexOf('-qmp') + 1])[1];
  require('node:net').createServer((socket) => {
    // As QEMU, a client gone mid-answer (its own deadline passed) ends only that connection.
    socket.on('error', () => {});
    socket.write(JSON.stringify({ QMP: { version: {}, capabilities: [] } }) + '\\n');
    socket.on('data', (chunk) => {
      for (const line of String(chunk).split('\\n').filter(Boolean)) {
        const { execute } = JSON.parse(line);
        const answer = execute === 'query-status' ? { status, running: status === 'running' } : {};
        socket.write(JSON.stringify({ return: answer }) + '\\n');
        // As QEMU: cont runs a paused guest; a reset leaves a guest paused on io-error in prelaunch.
        if (execute === 'cont') status = 'running';
        if (execute === 'system_reset' && status === 'io-error') status = 'prelaunch';
        if (execute === 'quit') process.exit(0);
        // A guest that powers down at the POWER_DOWN_AT-th press of its button.
        if (execute === 'system_powerdown') {
          presses += 1;
          require('node:fs').appendFileSync(process.env.PRESSES_FILE, 'press\\n');
          if (presses === Number(process.env.POWER_DOWN_AT)) process.exit(0);
        }
      }
    });
  }).listen(socketPath, ready);
} else {
  ready();
}
setInterval(() => {}, 1000);
`;

/**
 * The real process table, except that the fake QEMUs run a program that reads as
 * qemu-system-x86_64, and the pids in `foreign` as another user's.
 */
class FakeQemuTable extends ProcessTable {
  readonly fakes = new Set<number>();
  readonly foreign = new Set<number>();

  override async get(pid: number): Promise<HostProcess | undefined> {
    const entry = await super.get(pid);
    if (entry && this.foreign.has(pid)) entry.uid = process.getuid!() + 1;
    return entry;
  }

  protected override exeOf(pid: number): Promise<string | undefined> {
    if (this.fakes.has(pid)) return Promise.resolve('/usr/bin/qemu-system-x86_64');
    return super.exeOf(pid);
  }
}

describe('QemuDriver finds and stops every QEMU of its VMs', () => {
  let root: string;
  let files: VmFiles;
  let table: FakeQemuTable;
  let qemu: QemuDriver;
  let hostFacts: HostFactsService;
  let warnings: string[];
  const children: ChildProcess[] = [];

  /** Resolves once `check` holds, polling (a QEMU stopped in the background). */
  async function eventually(check: () => Promise<boolean>): Promise<void> {
    for (let tries = 0; !(await check()); tries++) {
      if (tries > 100) throw new Error('never happened');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-safety-'));
    const config = vmHostConfig({ VM_DISK_DIR: root, VM_WG_IP: '127.0.0.1' });
    files = new VmFiles(config);
    await files.prepare();
    await writeFile(join(root, 'fake-qemu.js'), FAKE_QEMU);
    const paths = Object.assign(new HostFactsPaths(), { kvmDevice: join(root, 'kvm') });
    table = new FakeQemuTable(paths);
    hostFacts = new HostFactsService(paths, config);
    qemu = new QemuDriver(config, files, hostFacts, table, new CrashFailpoint(config), NO_FIREWALL);
    warnings = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await rm(root, { recursive: true, force: true });
  });

  /** Starts a fake QEMU for `vmId` whose files are under `diskDir`; resolves once it runs. */
  async function fakeQemu(
    vmId: string,
    options: {
      diskDir?: string;
      accel?: 'kvm' | 'tcg';
      ignoreTerm?: boolean;
      /** Reads as node, as it is: only its command line looks like QEMU. */
      otherProgram?: boolean;
      otherUser?: boolean;
      qmpStatus?: string;
      /** Its guest powers down at this press of the ACPI button (never when not given). */
      powerDownAt?: number;
    } = {},
  ): Promise<number> {
    const runDir = join(options.diskDir ?? root, 'run', vmId);
    await mkdir(runDir, { recursive: true });
    const args = qemuArgs({
      vmId,
      ramMb: 64,
      vcpuCount: 1,
      accel: options.accel ?? 'tcg',
      disk: join(root, 'disks', `${vmId}.qcow2`),
      seedIso: join(runDir, 'seed.iso'),
      qmpSocket: join(runDir, 'qmp.sock'),
      pidFile: join(runDir, 'qemu.pid'),
      serialLog: join(runDir, 'serial.log'),
      forwardAddress: '127.0.0.1',
      forwards: [{ host_port: 40_123, guest_port: 22, protocol: 'tcp' as const }],
    });
    const child = spawn(process.execPath, [join(root, 'fake-qemu.js'), ...args], {
      argv0: 'qemu-system-x86_64',
      env: {
        ...(options.ignoreTerm ? { IGNORE_TERM: '1' } : {}),
        ...(options.qmpStatus ? { QMP_STATUS: options.qmpStatus } : {}),
        PRESSES_FILE: join(runDir, 'presses'),
        POWER_DOWN_AT: String(options.powerDownAt ?? 0),
      },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    children.push(child);
    await once(child.stdout, 'data');
    if (!options.otherProgram) table.fakes.add(child.pid!);
    if (options.otherUser) table.foreign.add(child.pid!);
    return child.pid!;
  }

  it("finds a VM's QEMU by its name and pidfile, with its ports, acceleration, memory, RAM and vCPUs", async () => {
    const vmId = 'vm-00000000000000a1';
    const pid = await fakeQemu(vmId, { accel: 'kvm' });
    await fakeQemu('vm-00000000000000a2', { diskDir: join(root, 'another-agent') });
    const found = await qemu.find([vmId, 'vm-00000000000000a2', 'vm-00000000000000a3']);
    expect([...found.keys()]).toEqual([vmId]);
    expect(found.get(vmId)).toEqual({
      record: { kind: 'qemu', accel: 'kvm', pid },
      hostPorts: [{ host_port: 40_123, guest_port: 22, protocol: 'tcp' }],
      rssMb: expect.any(Number),
      ramMb: 64,
      vcpuCount: 1,
      summary: `QEMU pid ${pid}, kvm`,
    });
    expect(found.get(vmId)!.rssMb).toBeGreaterThan(1);
    // A QEMU found is put in the guests' cgroup if it is not (one started before the filter).
    expect(enclose).toHaveBeenCalledWith(vmId, [pid]);
  });

  it.each([
    ['another program with a QEMU command line', { otherProgram: true }],
    ["another user's QEMU", { otherUser: true }],
  ])('leaves alone %s: not found, not stopped', async (_what, impostor) => {
    const vmId = 'vm-00000000000000a4';
    const pid = await fakeQemu(vmId, impostor);
    expect((await qemu.find([vmId])).size).toBe(0);
    await qemu.stop(vmId, { kind: 'qemu', accel: 'tcg', pid });
    expect(await table.get(pid)).toMatchObject({ pid });
    expect(await qemu.inspect(vmId, { kind: 'qemu', accel: 'tcg', pid })).toBe('stopped');
    expect(warnings).toEqual([]);
  });

  it('sees a guest KVM stopped with internal-error as not running, marks KVM failed and stops its QEMU', async () => {
    await writeFile(join(root, 'kvm'), '');
    const vmId = 'vm-00000000000000e1';
    const pid = await fakeQemu(vmId, { accel: 'kvm', qmpStatus: 'internal-error' });
    const record = { kind: 'qemu', accel: 'kvm', pid };
    expect(await hostFacts.kvmUsable()).toBe(true);
    expect(await qemu.inspect(vmId, record)).toBe('stopped');
    expect(await hostFacts.kvmUsable()).toBe(false);
    expect(hostFacts.kvmFailureReason()).toBe(
      `vm ${vmId}: guest stopped under KVM with QMP status internal-error`,
    );
    await eventually(async () => (await table.get(pid)) === undefined);
    expect(warnings).toContain(
      `vm ${vmId}: guest stopped under KVM with QMP status internal-error; stopping its QEMU to start it again`,
    );
  });

  it("once KVM has run a guest here, stops a guest's QEMU in internal-error but leaves the node's KVM usable", async () => {
    jest.spyOn(KvmStarts.prototype, 'hasRunAGuest', 'get').mockReturnValue(true);
    await writeFile(join(root, 'kvm'), '');
    const vmId = 'vm-00000000000000e3';
    const pid = await fakeQemu(vmId, { accel: 'kvm', qmpStatus: 'internal-error' });
    expect(await qemu.inspect(vmId, { kind: 'qemu', accel: 'kvm', pid })).toBe('stopped');
    await eventually(async () => (await table.get(pid)) === undefined);
    expect(await hostFacts.kvmUsable()).toBe(true);
    expect(hostFacts.kvmFailureReason()).toBeNull();
  });

  it('sees a guest QEMU paused on a failed write as io-error, and runs it again with cont', async () => {
    const vmId = 'vm-00000000000000e4';
    const pid = await fakeQemu(vmId, { qmpStatus: 'io-error' });
    const record = { kind: 'qemu', accel: 'tcg', pid };
    expect(await qemu.inspect(vmId, record)).toBe('io-error');
    await qemu.resume(vmId);
    expect(await qemu.inspect(vmId, record)).toBe('running');
  });

  it('resets a guest paused on io-error into running, not into prelaunch', async () => {
    const vmId = 'vm-00000000000000e5';
    const pid = await fakeQemu(vmId, { qmpStatus: 'io-error' });
    await qemu.reset(vmId);
    expect(await qemu.inspect(vmId, { kind: 'qemu', accel: 'tcg', pid })).toBe('running');
  });

  it('sees a running guest as running, and leaves KVM be', async () => {
    await writeFile(join(root, 'kvm'), '');
    const vmId = 'vm-00000000000000e2';
    const pid = await fakeQemu(vmId, { accel: 'kvm', qmpStatus: 'running' });
    expect(await qemu.inspect(vmId, { kind: 'qemu', accel: 'kvm', pid })).toBe('running');
    expect(await hostFacts.kvmUsable()).toBe(true);
  });

  describe('powering a guest down (ACPI)', () => {
    const presses = async (vmId: string) =>
      (await readFile(join(root, 'run', vmId, 'presses'), 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean).length;

    it('presses the button again until the guest powers down: a guest still booting misses a press', async () => {
      qemu.powerButtonEveryMs = 100;
      const vmId = 'vm-00000000000000d1';
      const pid = await fakeQemu(vmId, { qmpStatus: 'running', powerDownAt: 3 });
      expect(await qemu.powerDown(vmId, { kind: 'qemu', accel: 'tcg', pid }, 10_000)).toBe(true);
      expect(await presses(vmId)).toBe(3);
      expect(await table.get(pid)).toBeUndefined();
    });

    it('gives up at its deadline when the guest never powers down, having pressed more than once; its QEMU left to the stop', async () => {
      qemu.powerButtonEveryMs = 20;
      const vmId = 'vm-00000000000000d2';
      const pid = await fakeQemu(vmId, { qmpStatus: 'running' });
      expect(await qemu.powerDown(vmId, { kind: 'qemu', accel: 'tcg', pid }, 500)).toBe(false);
      expect(await presses(vmId)).toBeGreaterThan(1);
      // Its process still there (signal 0 asks only that): the stop that follows ends it.
      expect(process.kill(pid, 0)).toBe(true);
      expect(warnings).toEqual([]);
    });

    it('keeps trying when QMP does not answer, and says so at its deadline', async () => {
      qemu.powerButtonEveryMs = 20;
      const vmId = 'vm-00000000000000d3';
      const pid = await fakeQemu(vmId);
      expect(await qemu.powerDown(vmId, { kind: 'qemu', accel: 'tcg', pid }, 300)).toBe(false);
      expect(warnings).toEqual([
        expect.stringMatching(new RegExp(`^vm ${vmId}: ACPI power-down could not be asked: `)),
      ]);
    });
  });

  it('stops a QEMU whose pid the sidecar never got, found by name, and is done only once it is gone', async () => {
    const vmId = 'vm-00000000000000b1';
    const pid = await fakeQemu(vmId);
    await qemu.stop(vmId, { kind: 'qemu', accel: 'tcg', pid: null });
    expect(await table.get(pid)).toBeUndefined();
    expect(warnings).toEqual([`vm ${vmId}: stopping QEMU pid ${pid}, found by name`]);
    expect((await qemu.find([vmId])).size).toBe(0);
  });

  it('kills a QEMU that ignores quit and SIGTERM, and stops a second one of the same VM too', async () => {
    qemu.stopGraceMs = 200;
    const vmId = 'vm-00000000000000c1';
    const first = await fakeQemu(vmId, { ignoreTerm: true });
    const second = await fakeQemu(vmId);
    await qemu.stop(vmId, { kind: 'qemu', accel: 'tcg', pid: first });
    expect(await table.get(first)).toBeUndefined();
    expect(await table.get(second)).toBeUndefined();
    expect(warnings).toContain(
      `vm ${vmId}: QEMU pid ${first} ignored quit and SIGTERM; killing it`,
    );
  }, 15_000);

  it('makes the disk and seed ISO private (0600) in a private run folder (0700)', async () => {
    const base = join(root, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', base, '1M']);
    const config = vmHostConfig({
      VM_DISK_DIR: root,
      VM_BASE_IMAGE: base,
      VM_WG_IP: '127.0.0.1',
    });
    const paths = new HostFactsPaths();
    const driver = new QemuDriver(
      config,
      files,
      new HostFactsService(paths),
      table,
      new CrashFailpoint(config),
      NO_FIREWALL,
    );
    const vmId = await files.newVmId();
    await driver.makeFiles({ vmId, vmType: 'web', ramMb: 64, vcpuCount: 1 });
    const mode = async (path: string): Promise<string> =>
      ((await stat(path)).mode & 0o777).toString(8);
    expect(await mode(files.disk(vmId))).toBe('600');
    expect(await mode(join(files.runDir(vmId), 'seed.iso'))).toBe('600');
    expect(await mode(files.runDir(vmId))).toBe('700');
    expect(await readdir(files.runDir(vmId))).toEqual(['seed.iso']);
  });
});
