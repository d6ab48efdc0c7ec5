import { spawnSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join, relative } from 'node:path';
import { FLEET_MAIN, VM_HOST_MAIN } from './daemons';

const ROOT = join(__dirname, '../..');

/** The daemons' build output and the files they read at run time, relative to the checkout. */
const RUNTIME_FILES = [
  'dist/apps/fleet',
  'dist/apps/vm-host',
  'package.json',
  'openapi/vm-host.openapi.json',
];

/** Not TypeScript (declarations, sources) nor a source map: Node never reads them, so no copy. */
function runsInNode(path: string): boolean {
  return !/\.(c|m)?ts$|\.map$/.test(path);
}

/**
 * A copy in `folder` of what the built controller and agent run, laid out as in the checkout:
 * their build output, the files they read (package.json, the agent's committed OpenAPI
 * document) and the production dependencies (`npm ls --omit=dev`, each top-level package with
 * what it nests), as the Debian packages hold them (deploy/packaging/build-packages.ts).
 * For a daemon run as another, unprivileged user: it cannot run them from the checkout when a
 * folder above it is private (a clone in root's home, or in any `mktemp -d`, is 0700), so
 * `folder` must be one it can reach. Returns the copy's entry points.
 */
export function copyBuiltDaemons(folder: string): { fleetMain: string; vmHostMain: string } {
  const npm = spawnSync('npm', ['ls', '--omit=dev', '--parseable', '--all'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  if (npm.status !== 0) throw new Error(`npm ls --omit=dev failed:\n${npm.stderr}`);
  const dependencies = npm.stdout
    .split('\n')
    .map((path) => relative(ROOT, path))
    .filter((path) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path));
  for (const path of [...RUNTIME_FILES, ...dependencies]) {
    cpSync(join(ROOT, path), join(folder, path), { recursive: true, filter: runsInNode });
  }
  return {
    fleetMain: join(folder, relative(ROOT, FLEET_MAIN)),
    vmHostMain: join(folder, relative(ROOT, VM_HOST_MAIN)),
  };
}
