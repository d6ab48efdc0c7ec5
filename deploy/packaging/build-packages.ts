/**
 * `npm run package`: the two Debian packages, from the build output (`npm run build` first) and
 * the production dependencies already in node_modules, so it needs no network:
 *
 *   dist/packages/service-vm-fleet_<version>_all.deb
 *   dist/packages/service-vm-host_<version>_all.deb
 *
 * Each holds, under /usr/lib/<package>/, its app's compiled JavaScript (no source maps, no
 * tests) and, of node_modules, only the files its programs load: traced from each main.js with
 * @vercel/nft (every require and import, and the files read by path that it can follow), plus
 * the assets listed below that a program serves by folder; its command in /usr/bin (the
 * controller's package also ppn-fleet, the operator's CLI); its unit in
 * /lib/systemd/system; its /etc/default file (a conffile) made from deploy/systemd/*.env.example;
 * the controller's, the alert rules and the Grafana dashboard in /usr/share/ppn-fleet/; and the
 * maintainer scripts in deploy/packaging/<package>/. Built with dpkg-deb.
 */
import { nodeFileTrace } from '@vercel/nft';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const OUT = join(ROOT, 'dist', 'packages');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

interface DebianPackage {
  name: string;
  /** The nest app whose build output (dist/apps/<app>) it ships. */
  app: string;
  /** Its /etc/default file, made from deploy/systemd/<defaults>.env.example. */
  defaults: string;
  /** Files of the checkout it reads at run time, installed at the same path under its folder. */
  runtimeFiles: string[];
  /**
   * Other apps' commands it ships beside its own, on the same dependency tree: /usr/bin/<name>
   * runs dist/apps/<app>'s main.js from the package's folder.
   */
  commands?: Array<{ name: string; app: string }>;
  /**
   * Files of node_modules its programs read by a path the trace cannot follow (a folder served
   * as it is), relative to the checkout.
   */
  assets?: string[];
  /** Files of the checkout for the operator to copy, installed in /usr/share/ppn-fleet/. */
  operatorFiles?: string[];
  depends: string[];
  /** What an optional part needs (apt installs Recommends by default). */
  recommends?: string[];
  summary: string;
  description: string;
}

/**
 * The Node.js majors the suite runs on (.ci/run: 20, then the unit and end-to-end tiers on 22
 * and 24); docs/installing.md, "Node.js versions". A later major is untested, so not admitted.
 */
const NODEJS = ['nodejs (>= 20)', 'nodejs (<< 25)'];

const PACKAGES: DebianPackage[] = [
  {
    name: 'service-vm-fleet',
    app: 'fleet',
    defaults: 'vm-fleet',
    // Its version is ppn_fleet_build_info's (libs/daemon/src/package-version.ts finds it above).
    runtimeFiles: ['package.json'],
    // The operator's CLI: it runs where the controller does (its default endpoint is
    // 127.0.0.1:9203, `node-token` needs the fleet secret kept there) and needs no dependency
    // the controller lacks, so it costs no second copy of the tree.
    commands: [{ name: 'ppn-fleet', app: 'ppn-fleet' }],
    // Swagger UI at /docs (both listeners): @nestjs/swagger serves swagger-ui-dist's folder as
    // static files; these are the ones its page loads.
    assets: [
      'swagger-ui.css',
      'swagger-ui-bundle.js',
      'swagger-ui-standalone-preset.js',
      'favicon-16x16.png',
      'favicon-32x32.png',
    ]
      .map((file) => `node_modules/swagger-ui-dist/${file}`)
      .concat(
        // The VM page's terminal: the console serves these two of @xterm/xterm (and resolves
        // them by its package.json) by a path the trace does not follow.
        ['package.json', 'lib/xterm.js', 'css/xterm.css'].map(
          (file) => `node_modules/@xterm/xterm/${file}`,
        ),
      ),
    // The alert rules with their unit tests (side by side, as promtool test rules needs them)
    // and the Grafana dashboard: docs/operating.md, "Alert rules and a Grafana dashboard".
    operatorFiles: [
      'deploy/prometheus/ppn-fleet.rules.yml',
      'deploy/prometheus/ppn-fleet.rules.test.yml',
      'deploy/grafana/ppn-fleet.json',
      // The base image builder, run by `ppn-fleet image build` (docs/vms.md, "Base images").
      'deploy/images/build-debian-image.sh',
    ],
    depends: NODEJS,
    // The image builder's tools: a controller that never builds an image does without them.
    recommends: ['mmdebstrap', 'extlinux', 'syslinux-common', 'fdisk', 'e2fsprogs', 'qemu-utils'],
    summary: 'PPN fleet controller: one VM pool over several machines',
    description:
      'Listens on port 9203, places VMs on the enrolled nodes (service-vm-host) and keeps\n' +
      'fleet state in memory or in a Redis shared by several controllers.\n' +
      "Ships ppn-fleet, the operator's command line (status, nodes, VMs, node tokens,\n" +
      'base images for the nodes: ppn-fleet image build).',
  },
  {
    name: 'service-vm-host',
    app: 'vm-host',
    defaults: 'vm-host',
    // Served at /docs-json (apps/vm-host/src/docs/committed-docs.ts finds it above main.js);
    // package.json's version is ppn_host_build_info's.
    // The unit's ExecStartPre= (as root): the guests' cgroup and firewall.
    runtimeFiles: [
      'openapi/vm-host.openapi.json',
      'package.json',
      'deploy/systemd/vm-host-guest-firewall',
    ],
    // genisoimage: the agent refuses to start without it (it makes each VM's cloud-init seed).
    // nftables: the guests' firewall, loaded by the unit before the agent starts.
    depends: [...NODEJS, 'adduser', 'qemu-system-x86', 'qemu-utils', 'genisoimage', 'nftables'],
    summary: 'PPN node agent: runs the fleet controller’s VMs on this machine with QEMU',
    description:
      'Heartbeats to the fleet controller and starts, lists and deletes QEMU VMs on request,\n' +
      'as the system user vm-host (group kvm), its disks in /var/lib/vm-fleet.',
  },
];

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status ?? result.signal}):\n${result.stderr}`,
    );
  }
  return result.stdout;
}

/**
 * Modules that a traced file requires only on a path none of our programs takes, each with that
 * path: left out of the trace, and never shipped (typescript alone is 23 MB).
 */
const NEVER_LOADED: Record<string, string> = {
  typescript:
    "cosmiconfig's loader of TypeScript config files, for nest-commander's plugins (ppn-fleet has none)",
  prettier: '@fig/complete-commander formats Fig completion specs with it',
  '@fig/complete-commander':
    "nest-commander's CompletionFactory, for Fig completion specs (ppn-fleet registers none)",
};

function neverLoaded(path: string): boolean {
  return Object.keys(NEVER_LOADED).some((name) => path.includes(`node_modules/${name}/`));
}

/**
 * The files of node_modules that the given main.js files load (relative to the checkout), as
 * @vercel/nft traces them: a module required only inside a `try` that it does not find (Nest's
 * optional microservices, websockets) is not installed here either. Of a package with
 * conditional `exports`, the files of every branch some supported Node takes.
 */
async function loadedDependencyFiles(mains: string[]): Promise<string[]> {
  // Of an `exports` with "module-sync", both branches: Node 20.19+ and 22.12+ take it, older
  // ones not, and the package runs on whichever Node it is given. Traced twice, as the tracer
  // follows that condition only where `exports` gives it directly, not inside a list.
  const fileList = new Set<string>();
  for (const conditions of [['node'], ['node', 'module-sync']]) {
    const traced = await nodeFileTrace(mains, {
      base: ROOT,
      ignore: neverLoaded,
      conditions,
      moduleSyncCatchall: true,
    });
    for (const file of traced.fileList) fileList.add(file);
  }
  return [...fileList].filter((file) => file.startsWith('node_modules/') && runsInNode(file));
}

/** Not run by Node: type declarations and TypeScript sources, source maps. */
function runsInNode(file: string): boolean {
  return !/\.(c|m)?ts$|\.map$/.test(file);
}

/** The package's own copy of each file of node_modules, at the same path under its folder. */
function copyDependencies(files: string[], target: string): void {
  for (const file of files) {
    if (neverLoaded(file)) throw new Error(`${file}: never loaded, yet listed for the package`);
    mkdirSync(dirname(join(target, file)), { recursive: true });
    cpSync(join(ROOT, file), join(target, file));
  }
}

/** The app's compiled JavaScript, without source maps. */
function copyBuildOutput(app: string, target: string): string {
  const built = join(ROOT, 'dist', 'apps', app);
  const main = join(built, 'apps', app, 'src', 'main.js');
  if (!existsSync(main))
    throw new Error(`${relative(ROOT, main)} is missing: run \`npm run build\``);
  cpSync(built, target, { recursive: true, filter: (path) => !path.endsWith('.map') });
  return relative(built, main);
}

/**
 * /usr/bin/<command>: runs main.js with /usr/bin/node and the Node options of main.js's own
 * `#!/usr/bin/env -S node ...` line, so neither depends on the PATH. `exec`: systemd watches
 * (and signals) node itself.
 */
function commandWrapper(main: string, installedMain: string): string {
  const firstLine = readFileSync(main, 'utf8').split('\n', 1)[0];
  const options = /^#!\/usr\/bin\/env(?: -S)? node((?: +-\S+)*) *$/.exec(firstLine)?.[1] ?? '';
  return `#!/bin/sh\nexec /usr/bin/node${options.trimEnd()} ${installedMain} "$@"\n`;
}

/**
 * The env example with every variable commented out: the agent's three required ones too, so it
 * refuses to start until the operator has set them (the package enables nothing).
 */
function defaultsFile(envExample: string): string {
  return readFileSync(envExample, 'utf8').replace(/^(VM_[A-Z0-9_]+=)/gm, '#$1');
}

/** Folders 0755, files 0755 when executable and 0644 otherwise, whatever the umask was. */
function normalizeModes(path: string): void {
  const stat = statSync(path);
  if (stat.isDirectory()) {
    chmodSync(path, 0o755);
    for (const entry of readdirSync(path)) normalizeModes(join(path, entry));
  } else {
    chmodSync(path, stat.mode & 0o111 ? 0o755 : 0o644);
  }
}

function installedSizeKb(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return Math.ceil(stat.size / 1024);
  return readdirSync(path).reduce((sum, entry) => sum + installedSizeKb(join(path, entry)), 1);
}

async function build(pkg: DebianPackage): Promise<string> {
  const staging = join(OUT, `.${pkg.name}`);
  rmSync(staging, { recursive: true, force: true });
  const libDir = join(staging, 'usr', 'lib', pkg.name);
  const main = copyBuildOutput(pkg.app, libDir);
  for (const file of pkg.runtimeFiles) {
    mkdirSync(dirname(join(libDir, file)), { recursive: true });
    cpSync(join(ROOT, file), join(libDir, file));
  }
  const mains = [pkg.app, ...(pkg.commands ?? []).map(({ app }) => app)].map((app) =>
    join(ROOT, 'dist', 'apps', app, 'apps', app, 'src', 'main.js'),
  );
  copyDependencies([...(await loadedDependencyFiles(mains)), ...(pkg.assets ?? [])], libDir);
  for (const file of pkg.operatorFiles ?? []) {
    const shared = join(staging, 'usr', 'share', 'ppn-fleet', basename(file));
    mkdirSync(dirname(shared), { recursive: true });
    cpSync(join(ROOT, file), shared);
  }

  const bin = join(staging, 'usr', 'bin', pkg.name);
  mkdirSync(dirname(bin), { recursive: true });
  writeFileSync(bin, commandWrapper(join(libDir, main), `/usr/lib/${pkg.name}/${main}`), {
    mode: 0o755,
  });
  for (const command of pkg.commands ?? []) {
    const commandMain = copyBuildOutput(command.app, libDir);
    writeFileSync(
      join(staging, 'usr', 'bin', command.name),
      commandWrapper(join(libDir, commandMain), `/usr/lib/${pkg.name}/${commandMain}`),
      { mode: 0o755 },
    );
  }

  const unit = join(staging, 'lib', 'systemd', 'system', `${pkg.name}.service`);
  mkdirSync(dirname(unit), { recursive: true });
  cpSync(join(ROOT, 'deploy', 'systemd', `${pkg.name}.service`), unit);

  const defaults = join(staging, 'etc', 'default', pkg.defaults);
  mkdirSync(dirname(defaults), { recursive: true });
  writeFileSync(
    defaults,
    defaultsFile(join(ROOT, 'deploy', 'systemd', `${pkg.defaults}.env.example`)),
  );

  const debian = join(staging, 'DEBIAN');
  mkdirSync(debian);
  for (const script of ['postinst', 'prerm', 'postrm']) {
    cpSync(join(__dirname, pkg.name, script), join(debian, script));
  }
  writeFileSync(join(debian, 'conffiles'), `/etc/default/${pkg.defaults}\n`);
  normalizeModes(staging);
  // It may hold tokens (VM_FLEET_*_TOKEN); systemd reads it as root.
  chmodSync(defaults, 0o600);
  const size = installedSizeKb(staging) - installedSizeKb(debian);
  writeFileSync(
    join(debian, 'control'),
    [
      `Package: ${pkg.name}`,
      `Version: ${version}`,
      'Architecture: all',
      'Section: admin',
      'Priority: optional',
      'Maintainer: PPN fleet maintainers <root@localhost>',
      `Installed-Size: ${size}`,
      `Depends: ${pkg.depends.join(', ')}`,
      ...(pkg.recommends ? [`Recommends: ${pkg.recommends.join(', ')}`] : []),
      `Description: ${pkg.summary}`,
      ...pkg.description.split('\n').map((line) => ` ${line}`),
      '',
    ].join('\n'),
  );
  chmodSync(join(debian, 'control'), 0o644);
  chmodSync(join(debian, 'conffiles'), 0o644);

  const deb = join(OUT, `${pkg.name}_${version}_all.deb`);
  // gzip: quick to make and read by every dpkg; --root-owner-group: root owns every file.
  run('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', staging, deb]);
  rmSync(staging, { recursive: true, force: true });
  return deb;
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  for (const pkg of PACKAGES) {
    console.log(`built ${relative(ROOT, await build(pkg))}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
