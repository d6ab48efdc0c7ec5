import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  appendFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { FLEET_URL, eventually } from '../support/daemons';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The Debian packages as an operator gets them: `npm run package`'s script builds them from the
 * build output, apt installs them for real on this (CI's throwaway) machine, the installed
 * commands run as unprivileged users (as their units would run them), apt purges them. The
 * machine is left as it was: packages purged, the agent's user and groups and the state folder
 * removed when they were not there before, a state folder that was there put back.
 */
jest.setTimeout(120_000);

const ROOT = join(__dirname, '../..');
const { version, devDependencies } = JSON.parse(
  readFileSync(join(ROOT, 'package.json'), 'utf8'),
) as {
  version: string;
  devDependencies: Record<string, string>;
};
const PACKAGES = ['service-vm-fleet', 'service-vm-host'] as const;
const DEB = (name: string): string => join(ROOT, 'dist', 'packages', `${name}_${version}_all.deb`);
const STATE_DIR = '/var/lib/vm-fleet';
const STATE_DIR_ASIDE = `${STATE_DIR}.packages-system-spec`;
const DEFAULTS = {
  'service-vm-fleet': '/etc/default/vm-fleet',
  'service-vm-host': '/etc/default/vm-host',
};
/** Installed-Size, in KiB: no package above 20 MiB. */
const MAX_INSTALLED_KB = 20 * 1024;
/**
 * Production dependencies each package's programs load (the controller's and ppn-fleet's; the
 * agent's), and some they never load, which it must not ship.
 */
const LOADED = {
  'service-vm-fleet': {
    ships: ['@nestjs/core', '@nestjs/swagger', 'ioredis', 'nest-commander', 'openapi-fetch'],
    not: ['systeminformation', 'typescript', 'prettier'],
  },
  'service-vm-host': {
    ships: ['@nestjs/core', 'prom-client', 'systeminformation'],
    not: ['ioredis', 'nest-commander', 'openapi-fetch', 'inquirer', 'typescript', 'prettier'],
  },
};

function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const result = spawnSync(command, args, {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...env },
  });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`,
    );
  }
  return result.stdout;
}

function installed(name: string): boolean {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('installed');
}

function exists(database: 'passwd' | 'group', name: string): boolean {
  return spawnSync('getent', [database, name]).status === 0;
}

/** `NAME=value` lines of an EnvironmentFile (comments and blank lines skipped). */
function environmentFile(path: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^\s*([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match) env[match[1]] = match[2];
  }
  return env;
}

/** What a unit's [Service] section says of how to run its command, as far as setpriv can. */
interface UnitService {
  /** ExecStart, split on spaces. */
  command: string[];
  /** Its EnvironmentFile(s), then its Environment= lines (%S and %% expanded; others skipped). */
  environment: Record<string, string>;
  noNewPrivileges: boolean;
  /** CapabilityBoundingSet= empty: no capability at all. */
  noCapabilities: boolean;
  umask?: string;
}

function unitService(unit: string): UnitService {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const line of readFileSync(unit, 'utf8')
    .split('\n')
    .map((raw) => raw.trim())) {
    if (line.startsWith('[')) section = line;
    const setting = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (section !== '[Service]' || !setting) continue;
    settings.set(setting[1], [...(settings.get(setting[1]) ?? []), setting[2]]);
  }
  const last = (key: string): string | undefined => settings.get(key)?.at(-1);
  const yes = (key: string): boolean => /^(yes|true|on|1)$/.test(last(key) ?? '');
  const environment: Record<string, string> = {};
  for (const file of settings.get('EnvironmentFile') ?? []) {
    const path = file.replace(/^-/, '');
    if (existsSync(path)) Object.assign(environment, environmentFile(path));
  }
  for (const line of settings.get('Environment') ?? []) {
    for (const [, quoted, bare] of line.matchAll(/"([^"]*)"|(\S+)/g)) {
      const assignment = (quoted ?? bare).replace(/%S/g, '/var/lib').replace(/%%/g, '\0');
      const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(assignment);
      if (match && !match[2].includes('%')) environment[match[1]] = match[2].replace(/\0/g, '%');
    }
  }
  return {
    command: (last('ExecStart') ?? '').replace(/^[-@:+!]+/, '').split(/\s+/),
    environment,
    noNewPrivileges: yes('NoNewPrivileges'),
    noCapabilities: last('CapabilityBoundingSet') === '',
    umask: last('UMask'),
  };
}

/**
 * An installed package's daemon run as its unit would run it, as far as setpriv can: its
 * ExecStart as `user` (groups from /etc/group: the agent's kvm), its unit's environment (no
 * PATH of the test's), NoNewPrivileges, no capabilities and its UMask. Its output is kept.
 */
class InstalledDaemon {
  readonly process: ChildProcess;
  output = '';

  constructor(name: string, user: string, group: string) {
    const unit = unitService(`/lib/systemd/system/${name}.service`);
    const restrictions = [
      ...(unit.noNewPrivileges ? ['--no-new-privs'] : []),
      ...(unit.noCapabilities ? ['--bounding-set=-all', '--inh-caps=-all'] : []),
    ];
    this.process = spawn(
      'setpriv',
      [
        `--reuid=${user}`,
        `--regid=${group}`,
        '--init-groups',
        ...restrictions,
        '/bin/sh',
        '-c',
        'umask "$0" && exec "$@"',
        unit.umask ?? '0022',
        ...unit.command,
      ],
      {
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', NO_COLOR: '1', ...unit.environment },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const collect = (chunk: Buffer): void => {
      this.output += chunk.toString('utf8');
    };
    this.process.stdout!.on('data', collect);
    this.process.stderr!.on('data', collect);
  }

  async waitForOutput(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    const seen = await eventually(
      `${pattern} in the output`,
      () =>
        Promise.resolve(pattern.test(this.output) ? 'printed' : this.exited ? 'exited' : undefined),
      timeoutMs,
    ).catch((error: Error) => error.message);
    if (seen !== 'printed') throw new Error(`${seen} before ${pattern}; output:\n${this.output}`);
  }

  get exited(): boolean {
    return this.process.exitCode !== null || this.process.signalCode !== null;
  }

  /** Its exit code once it has exited by itself. */
  async exitCode(): Promise<number | null> {
    if (!this.exited) await new Promise((resolve) => this.process.once('exit', resolve));
    return this.process.exitCode;
  }

  async stop(): Promise<number | null> {
    if (this.exited) return this.process.exitCode;
    const exited = new Promise<number | null>((resolve) =>
      this.process.on('exit', (code) => resolve(code)),
    );
    this.process.kill('SIGTERM');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }
}

/** What dpkg installed for a package: every path it lists. */
function packageFiles(name: string): string[] {
  return run('dpkg-query', ['-L', name]).split('\n').filter(Boolean);
}

describe('the Debian packages', () => {
  const before = {
    user: false,
    userGroup: false,
    kvmGroup: false,
    stateDir: false,
  };
  const daemons: InstalledDaemon[] = [];

  beforeAll(() => {
    if (process.getuid?.() !== 0) throw new Error('installing packages needs root');
    for (const name of PACKAGES) {
      // Never purge an operator's installation.
      if (installed(name)) throw new Error(`${name} is installed on this machine already`);
    }
    before.user = exists('passwd', 'vm-host');
    before.userGroup = exists('group', 'vm-host');
    before.kvmGroup = exists('group', 'kvm');
    before.stateDir = existsSync(STATE_DIR);
    // VMs of an agent using the default VM_DISK_DIR (npm start's): not to be moved from under it.
    const runtime = join(STATE_DIR, 'run');
    if (existsSync(runtime) && readdirSync(runtime).length > 0) {
      throw new Error(`${runtime} holds VMs of a running agent (npm start?): stop it first`);
    }
    // Another run's agent (default VM_DISK_DIR) may have made it, as root: kept aside and put back.
    if (before.stateDir) renameSync(STATE_DIR, STATE_DIR_ASIDE);

    // ts-node's compile cache goes to a folder of this file's, removed after it.
    run(
      join(ROOT, 'node_modules', '.bin', 'ts-node'),
      ['-T', 'deploy/packaging/build-packages.ts'],
      {
        TMPDIR: scratchFolder('packaging-'),
      },
    );
    // No network here (test/isolated.sh): apt installs local files whose dependencies are met;
    // not the image builder's tools (the controller's Recommends), which it would download.
    run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...PACKAGES.map(DEB)]);
  }, 600_000);

  afterAll(async () => {
    await Promise.all(daemons.map((daemon) => daemon.stop()));
    killQemusUnder(STATE_DIR);
    const left = PACKAGES.filter(installed);
    if (left.length > 0) run('apt-get', ['purge', '-y', '-q', ...left]);
    rmSync(STATE_DIR, { recursive: true, force: true });
    if (before.stateDir) renameSync(STATE_DIR_ASIDE, STATE_DIR);
    if (!before.user && exists('passwd', 'vm-host')) run('userdel', ['vm-host']);
    if (!before.userGroup && exists('group', 'vm-host')) run('groupdel', ['vm-host']);
    if (!before.kvmGroup && exists('group', 'kvm')) run('groupdel', ['kvm']);
  }, 300_000);

  it('installs each command, unit and /etc/default file, the latter as conffiles', () => {
    for (const name of PACKAGES) {
      expect(() => accessSync(`/usr/bin/${name}`, constants.X_OK)).not.toThrow();
      expect(existsSync(`/lib/systemd/system/${name}.service`)).toBe(true);
      expect(readFileSync(`/lib/systemd/system/${name}.service`, 'utf8')).toBe(
        readFileSync(join(ROOT, 'deploy', 'systemd', `${name}.service`), 'utf8'),
      );
      expect(run('dpkg-query', ['-W', '-f=${Conffiles}', name])).toContain(DEFAULTS[name]);
      // The Node.js majors the suite runs on (20, 22, 24: .ci/run), none later.
      expect(run('dpkg-query', ['-W', '-f=${Depends}', name])).toMatch(
        /^nodejs \(>= 20\), nodejs \(<< 25\)(, |$)/,
      );
      // The agent's unit runs its guests' firewall helper as root (ExecStartPre=+), with nft.
      if (name === 'service-vm-host') {
        expect(() =>
          accessSync(
            '/usr/lib/service-vm-host/deploy/systemd/vm-host-guest-firewall',
            constants.X_OK,
          ),
        ).not.toThrow();
        expect(run('dpkg-query', ['-W', '-f=${Depends}', name])).toMatch(/, nftables(, |$)/);
      }
      // Nothing enabled: the operator does that once the variables are set.
      expect(readdirSync('/etc/systemd/system', { recursive: true })).not.toContainEqual(
        expect.stringContaining(name),
      );
    }
  });

  it('lists every variable in /etc/default, commented: the agent refuses to start as shipped', async () => {
    for (const name of PACKAGES) {
      const text = readFileSync(DEFAULTS[name], 'utf8');
      expect(text).toMatch(/^#VM_/m);
      expect(text).not.toMatch(/^\s*VM_/m);
      expect(statSync(DEFAULTS[name]).mode & 0o777).toBe(0o600);
    }
    const agent = new InstalledDaemon('service-vm-host', 'vm-host', 'vm-host');
    daemons.push(agent);
    expect(await agent.exitCode()).toBe(2);
    expect(agent.output).toMatch(/VM_FLEET_ENDPOINT/);
  });

  it('ships production code only: no sources, tests, source maps or dev dependencies', () => {
    for (const name of PACKAGES) {
      const files = packageFiles(name);
      const own = files.filter((file) => !file.includes('/node_modules/'));
      expect(own.filter((file) => /\.(ts|map)$|\.spec\.|\/test\//.test(file))).toEqual([]);
      expect(files.filter((file) => /\.(c|m)?ts$|\.map$/.test(file))).toEqual([]);
      const modules = `/usr/lib/${name}/node_modules`;
      // A dev dependency may still be a production package's dependency: only the others count.
      const production = run('npm', ['ls', '--omit=dev', '--parseable', '--all']);
      for (const dependency of Object.keys(devDependencies)) {
        if (production.includes(`/node_modules/${dependency}\n`)) continue;
        expect({ dependency, shipped: existsSync(join(modules, dependency)) }).toEqual({
          dependency,
          shipped: false,
        });
      }
    }
  });

  it('carries only what its programs load: no typescript or prettier, at most 20 MiB installed', () => {
    for (const name of PACKAGES) {
      const listed = run('dpkg-deb', ['-c', DEB(name)]);
      expect({
        name,
        typescriptOrPrettier: listed.match(/\/node_modules\/(typescript|prettier)\/.*/g),
      }).toEqual({ name, typescriptOrPrettier: null });
      const modules = `/usr/lib/${name}/node_modules`;
      expect({
        name,
        ships: LOADED[name].ships.filter((dependency) => existsSync(join(modules, dependency))),
        not: LOADED[name].not.filter((dependency) => existsSync(join(modules, dependency))),
      }).toEqual({ name, ships: LOADED[name].ships, not: [] });

      // The control file's Installed-Size, as dpkg keeps it, and what is really on disk.
      const declaredKb = Number(run('dpkg-deb', ['-f', DEB(name), 'Installed-Size']));
      const installedKb = Number(run('dpkg-query', ['-W', '-f=${Installed-Size}', name]));
      const onDiskKb = Math.ceil(
        packageFiles(name)
          .filter((path) => statSync(path).isFile())
          .reduce((sum, path) => sum + statSync(path).size, 0) / 1024,
      );
      expect({ name, installedKb }).toEqual({ name, installedKb: declaredKb });
      // Printed on failure with the sizes.
      const sizes = { name, installedKb, onDiskKb };
      expect({
        ...sizes,
        atMost20MiB: installedKb <= MAX_INSTALLED_KB,
        coversWhatIsOnDisk: onDiskKb <= installedKb,
      }).toEqual({ ...sizes, atMost20MiB: true, coversWhatIsOnDisk: true });
    }
  });

  it('ships the alert rules, their tests and the dashboard with the controller; promtool passes them there', () => {
    const shared = '/usr/share/ppn-fleet';
    for (const [file, from] of [
      ['ppn-fleet.rules.yml', 'deploy/prometheus'],
      ['ppn-fleet.rules.test.yml', 'deploy/prometheus'],
      ['ppn-fleet.json', 'deploy/grafana'],
    ]) {
      expect(readFileSync(join(shared, file), 'utf8')).toBe(
        readFileSync(join(ROOT, from, file), 'utf8'),
      );
    }
    expect(packageFiles('service-vm-host').filter((file) => file.startsWith(shared))).toEqual([]);
    const tested = spawnSync('promtool', ['test', 'rules', 'ppn-fleet.rules.test.yml'], {
      cwd: shared,
      encoding: 'utf8',
    });
    expect({ status: tested.status, output: tested.stdout + tested.stderr }).toEqual({
      status: 0,
      output: expect.stringContaining('SUCCESS') as string,
    });
  });

  it('ships the image builder with the controller; `ppn-fleet image build` runs it as root only', () => {
    const builder = '/usr/share/ppn-fleet/build-debian-image.sh';
    expect(readFileSync(builder, 'utf8')).toBe(
      readFileSync(join(ROOT, 'deploy/images/build-debian-image.sh'), 'utf8'),
    );
    expect(() => accessSync(builder, constants.X_OK)).not.toThrow();
    expect(run('dpkg-query', ['-W', '-f=${Recommends}', 'service-vm-fleet'])).toBe(
      'mmdebstrap, extlinux, syslinux-common, fdisk, e2fsprogs, qemu-utils',
    );
    // Not a full build here (2-4 min and Debian's mirror, which test/isolated.sh cuts off): it
    // refuses without root, saying so, and as root it runs the packaged builder, whose own check
    // of an option's value answers first.
    const asNobody = spawnSync(
      'setpriv',
      [
        '--reuid=nobody',
        '--regid=nogroup',
        '--init-groups',
        '/usr/bin/ppn-fleet',
        'image',
        'build',
      ],
      { encoding: 'utf8' },
    );
    expect({ status: asNobody.status, stderr: asNobody.stderr }).toEqual({
      status: 1,
      stderr:
        'ppn-fleet: image build needs root (mmdebstrap and a loop device): run it as root or with sudo\n',
    });
    const asRoot = spawnSync('/usr/bin/ppn-fleet', ['image', 'build', '--suite', 'no such'], {
      encoding: 'utf8',
    });
    expect({ status: asRoot.status, stderr: asRoot.stderr }).toEqual({
      status: 1,
      stderr: expect.stringMatching(
        /^build-debian-image: --suite 'no such' is not valid .*\nppn-fleet: image build failed \(exit 1\)\n$/,
      ) as string,
    });
  });

  it("reads each daemon's version, build_info's, from the package.json it ships", () => {
    for (const name of PACKAGES) {
      const script = `console.log(require('/usr/lib/${name}/libs/daemon/src/package-version.js').packageVersion())`;
      expect(run('/usr/bin/node', ['-e', script])).toBe(`${version}\n`);
    }
  });

  it("makes the agent's system user, in group kvm, and its state folder", () => {
    expect(run('id', ['-nG', 'vm-host']).split(/\s+/)).toEqual(
      expect.arrayContaining(['vm-host', 'kvm']),
    );
    expect(run('getent', ['passwd', 'vm-host'])).toContain(`:${STATE_DIR}:`);
    const state = statSync(STATE_DIR);
    expect(state.mode & 0o777).toBe(0o700);
    expect(state.uid).toBe(Number(run('id', ['-u', 'vm-host']).trim()));
  });

  it('runs the controller as nobody; it answers GET /v1/fleet', async () => {
    // As DynamicUser= would: an unprivileged user owning no file.
    const fleet = new InstalledDaemon('service-vm-fleet', 'nobody', 'nogroup');
    daemons.push(fleet);
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    expect((await fetch(`${FLEET_URL}/v1/fleet`)).status).toBe(200);
    // Swagger UI at /docs: its page and every file the page loads (swagger-ui-dist's, which the
    // trace of requires cannot see) come from the package.
    const page = await fetch(`${FLEET_URL}/docs`);
    const loads = [...(await page.text()).matchAll(/(?:src|href)="([^"]+)"/g)].map(
      ([, path]) => new URL(path, page.url).href,
    );
    expect(loads).toContainEqual(expect.stringMatching(/\/swagger-ui-bundle\.js$/));
    for (const url of loads) {
      expect({ url, status: (await fetch(url)).status }).toEqual({ url, status: 200 });
    }
    // The web console on the operations listener (127.0.0.1:9206, open: no API token): its page
    // and the stylesheet and script it loads come from the package.
    const consolePage = await fetch('http://127.0.0.1:9206/');
    expect(consolePage.status).toBe(200);
    const consoleLoads = [
      ...(await consolePage.text()).matchAll(/(?:src|href)="(\/console\/[^"]+)"/g),
    ];
    expect(consoleLoads.map(([, path]) => path).sort()).toEqual([
      '/console/assets/console.css',
      '/console/assets/console.js',
    ]);
    // And the VM page's terminal, xterm.js and its stylesheet, from the package's @xterm/xterm.
    const xterm = ['/console/assets/xterm.js', '/console/assets/xterm.css'];
    for (const path of [...consoleLoads.map(([, loaded]) => loaded), ...xterm]) {
      const url = new URL(path, consolePage.url).href;
      expect({ url, status: (await fetch(url)).status }).toEqual({ url, status: 200 });
    }
    // The operator's CLI comes with the controller: it runs, and reaches it.
    const cli = ['--reuid=nobody', '--regid=nogroup', '--init-groups', '/usr/bin/ppn-fleet'];
    expect(run('setpriv', [...cli, '--version'])).toBe(`${version}\n`);
    expect(Array.isArray(JSON.parse(run('setpriv', [...cli, 'nodes', '--json'])))).toBe(true);
  });

  it('runs the agent as vm-host with its default VM_DISK_DIR: it enrolls and runs a VM to Running', async () => {
    // As an operator would: the three required variables in /etc/default/vm-host.
    appendFileSync(
      DEFAULTS['service-vm-host'],
      'VM_FLEET_ENDPOINT=http://127.0.0.1:9203\nVM_NODE_ID=packaged-node\nVM_WG_IP=127.0.0.1\nVM_HEARTBEAT_INTERVAL_S=1\n',
    );
    // VM_BASE_IMAGE unset too: the agent makes a blank base image in its state folder.
    const agent = new InstalledDaemon('service-vm-host', 'vm-host', 'vm-host');
    daemons.push(agent);
    await agent.waitForOutput(/ enrolled: heartbeating to /);

    const created = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vm_type: 'packaged', ram_mb: 64, vcpu_count: 1 }),
    });
    const body = (await created.json()) as { vm_id: string; node_id: string };
    expect({ status: created.status, node_id: body.node_id }).toEqual({
      status: 201,
      node_id: 'packaged-node',
    });
    await eventually(
      `${body.vm_id} Running`,
      async () => {
        const vms = (await (await fetch(`${FLEET_URL}/v1/vms`)).json()) as Array<{
          vm_id: string;
          state: string;
        }>;
        const vm = vms.find(({ vm_id }) => vm_id === body.vm_id);
        return vm?.state === 'Running' ? vm : undefined;
      },
      60_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; the agent's output:\n${agent.output}`);
    });
    const [qemu] = liveQemusUnder(STATE_DIR);
    const vmHostUid = Number(run('id', ['-u', 'vm-host']).trim());
    expect(statSync(`/proc/${qemu.pid}`).uid).toBe(vmHostUid);
    // The agent runs, and QEMU as its child, under the unit's restrictions (QEMU's -daemonize
    // sets a umask of its own, so the agent's is the unit's).
    const unit = unitService('/lib/systemd/system/service-vm-host.service');
    const field = (pid: number, name: string): string | undefined =>
      new RegExp(`^${name}:\\s*(\\S+)$`, 'm').exec(
        readFileSync(`/proc/${pid}/status`, 'utf8'),
      )?.[1];
    expect({
      noNewPrivs: field(qemu.pid, 'NoNewPrivs'),
      capBnd: field(qemu.pid, 'CapBnd'),
      umask: field(agent.process.pid!, 'Umask'),
    }).toEqual({
      noNewPrivs: unit.noNewPrivileges ? '1' : '0',
      capBnd: unit.noCapabilities ? '0000000000000000' : expect.any(String),
      umask: (unit.umask ?? '0022').padStart(4, '0'),
    });

    expect((await fetch(`${FLEET_URL}/v1/vms/${body.vm_id}`, { method: 'DELETE' })).status).toBe(
      204,
    );
    await eventually(
      'no QEMU left',
      () => Promise.resolve(liveQemusUnder(STATE_DIR).length === 0 ? true : undefined),
      20_000,
    );
  });

  it('apt purge leaves no command, unit or /etc/default file; VM disks only when asked', async () => {
    for (const daemon of daemons) await daemon.stop();
    run('apt-get', ['purge', '-y', '-q', ...PACKAGES]);
    for (const name of PACKAGES) {
      expect(installed(name)).toBe(false);
      for (const path of [
        `/usr/bin/${name}`,
        ...(name === 'service-vm-fleet' ? ['/usr/bin/ppn-fleet', '/usr/share/ppn-fleet'] : []),
        `/usr/lib/${name}`,
        `/lib/systemd/system/${name}.service`,
        DEFAULTS[name],
      ]) {
        expect({ path, exists: existsSync(path) }).toEqual({ path, exists: false });
      }
    }
    // Kept without VM_FLEET_PURGE_DISKS=1, as is the system user (Debian's policy).
    expect(readdirSync(STATE_DIR)).toEqual(expect.arrayContaining(['base', 'disks']));
    expect(exists('passwd', 'vm-host')).toBe(true);

    // Asked, but a VM is left (its run folder; its QEMU may run): the disks stay, the purge
    // succeeds and says what to do.
    const leftVm = join(STATE_DIR, 'run', 'vm-00000000000000e1');
    mkdirSync(leftVm, { recursive: true });
    run('apt-get', ['install', '-y', '-q', DEB('service-vm-host')]);
    const refused = spawnSync('apt-get', ['purge', '-y', '-q', 'service-vm-host'], {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', VM_FLEET_PURGE_DISKS: '1' },
    });
    expect(refused.status).toBe(0);
    expect(installed('service-vm-host')).toBe(false);
    const said = `${refused.stdout}${refused.stderr}`;
    expect(said).toContain('VM_FLEET_PURGE_DISKS=1, but VMs are left: vm-00000000000000e1');
    // What works with the agent gone: stop the QEMU, forget the record (not: delete through it).
    expect(said).toContain('kill "$(cat /var/lib/vm-fleet/run/<vm_id>/qemu.pid)"');
    expect(said).toContain('ppn-fleet vm delete <vm_id> --forget');
    expect(said).not.toContain('DELETE /v1/vms/<vm_id>');
    expect(existsSync(leftVm)).toBe(true);

    // Once no VM is left, they go.
    rmSync(leftVm, { recursive: true });
    run('apt-get', ['install', '-y', '-q', DEB('service-vm-host')]);
    run('apt-get', ['purge', '-y', '-q', 'service-vm-host'], { VM_FLEET_PURGE_DISKS: '1' });
    expect(existsSync(STATE_DIR)).toBe(false);
  });
});
