/**
 * `npm run lint` runs this: fails, naming each one, when an import runs back up inside an app
 * or files of an app or lib import each other round a loop, or a lib imports a lib it does not
 * stand on (see app-imports.ts for the rules),
 * or when a hand-written source file of an app or lib is longer than MAX_SOURCE_LINES.
 */
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import {
  MAX_SOURCE_LINES,
  findImportCircles,
  findLibraryLayerImports,
  findLongFiles,
  findUpwardImports,
} from './app-imports';

const REPOSITORY = path.resolve(__dirname, '../..');

/** Every .ts file under `folder` (relative to the repository), with its text. */
export function readSources(folder: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(path.join(REPOSITORY, folder), {
    recursive: true,
    withFileTypes: true,
  })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.relative(REPOSITORY, path.join(entry.parentPath, entry.name));
    files.set(file.split(path.sep).join('/'), readFileSync(path.join(REPOSITORY, file), 'utf8'));
  }
  return files;
}

/** `libs/<lib>/src` of every lib. */
export function libSources(): string[] {
  return readdirSync(path.join(REPOSITORY, 'libs'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `libs/${entry.name}/src`);
}

/** The sources of every app and lib, together: imports run between them. */
export function allSources(): Map<string, string> {
  return new Map([...appSources(), ...libSources()].flatMap((folder) => [...readSources(folder)]));
}

/** `apps/<app>/src` of every app. */
export function appSources(): string[] {
  return readdirSync(path.join(REPOSITORY, 'apps'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `apps/${entry.name}/src`);
}

if (require.main === module) {
  let found = 0;
  for (const appSrc of appSources()) {
    for (const { file, specifier, reason } of findUpwardImports(appSrc, readSources(appSrc))) {
      console.error(`${file}: import '${specifier}': ${reason}`);
      found += 1;
    }
  }
  const sources = allSources();
  const circles = findImportCircles(sources);
  const long = findLongFiles(sources);
  const layers = findLibraryLayerImports(sources);
  for (const { file, specifier, reason } of layers) {
    console.error(`${file}: ${specifier ? `import '${specifier}': ` : ''}${reason}`);
  }
  for (const { file, lines } of long) {
    console.error(
      `${file}: ${lines} lines, more than ${MAX_SOURCE_LINES}: split it along its concerns`,
    );
  }
  for (const { files } of circles) {
    console.error(`${[...files, files[0]].join(' imports ')}: files never import each other`);
  }
  if (found > 0) {
    console.error(
      `${found} import(s) run back up inside an app (ARCHITECTURE.md, "Inside an app")`,
    );
  }
  if (layers.length > 0) {
    console.error(
      `${layers.length} import(s) between libs against their layers (ARCHITECTURE.md, the libraries' layers)`,
    );
  }
  if (circles.length > 0) {
    console.error(`${circles.length} circle(s) of imports between files of the apps and libs`);
  }
  if (long.length > 0) {
    console.error(
      `${long.length} hand-written source file(s) longer than ${MAX_SOURCE_LINES} lines`,
    );
  }
  if (found > 0 || layers.length > 0 || circles.length > 0 || long.length > 0) process.exit(1);
}
