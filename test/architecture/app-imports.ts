import * as path from 'node:path';
import * as ts from 'typescript';

/**
 * The rooms of an app: its root files (`apps/<app>/src/*.ts`: app module, bootstrap, main,
 * status table) wire the features together, and each first-level folder under `src/` is one
 * feature. Imports run down only: a feature never imports a root file, and no two features
 * import each other, directly or round a longer loop.
 *
 * Specs are left out: they compose features to test them and no running daemon loads them.
 */

/** One import that runs back up, and why it may not. */
export interface UpwardImport {
  /** The importing file, relative to the repository. */
  file: string;
  /** The import as written. */
  specifier: string;
  reason: string;
}

const ROOT = '';

function isSpec(file: string): boolean {
  return file.endsWith('.spec.ts');
}

/** What `specifier` in `file` points at, as a path relative to the repository (or undefined). */
function resolveImport(
  file: string,
  specifier: string,
  files: ReadonlyMap<string, string>,
  /** Where a relative specifier is read from, if not the importing file's folder. */
  from = path.posix.dirname(file),
): string | undefined {
  let target: string;
  if (specifier.startsWith('.')) target = path.posix.join(from, specifier);
  // tsconfig's baseUrl is the repository, so `apps/fleet/src/...` resolves as well.
  else if (specifier.startsWith('apps/')) target = path.posix.normalize(specifier);
  else return undefined;
  for (const candidate of [`${target}.ts`, target, `${target}/index.ts`]) {
    if (files.has(candidate)) return candidate;
  }
  // Not among the files given: a folder is one that holds files, anything else a file.
  const isFolder = [...files.keys()].some((known) => known.startsWith(`${target}/`));
  return isFolder ? `${target}/index.ts` : `${target}.ts`;
}

/** The feature folder of a file of the app at `appSrc` (ROOT for a root file). */
function featureOf(appSrc: string, file: string): string {
  const inside = file.slice(appSrc.length + 1);
  const slash = inside.indexOf('/');
  return slash === -1 ? ROOT : inside.slice(0, slash);
}

interface FolderImport {
  file: string;
  specifier: string;
  to: string;
}

/**
 * Every import that runs back up inside the app at `appSrc` (e.g. `apps/fleet/src`), among
 * `files`: repository-relative paths and their source text.
 */
export function findUpwardImports(
  appSrc: string,
  files: ReadonlyMap<string, string>,
): UpwardImport[] {
  const upward: UpwardImport[] = [];
  /** Feature → the imports of its files into each other feature. */
  const edges = new Map<string, Map<string, FolderImport[]>>();
  for (const [file, text] of files) {
    if (!file.startsWith(`${appSrc}/`) || !file.endsWith('.ts') || isSpec(file)) continue;
    const from = featureOf(appSrc, file);
    // Type-only imports count too: a loop of types is still two rooms that need each other.
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      const target = resolveImport(file, specifier, files);
      if (!target?.startsWith(`${appSrc}/`)) continue;
      const to = featureOf(appSrc, target);
      if (from === ROOT || from === to) continue;
      if (to === ROOT) {
        upward.push({
          file,
          specifier,
          reason: `the feature ${from}/ imports the app's root file ${path.posix.basename(target)}: root files wire features together, features never import them`,
        });
        continue;
      }
      const byTarget = edges.get(from) ?? new Map<string, FolderImport[]>();
      edges.set(from, byTarget);
      byTarget.set(to, [...(byTarget.get(to) ?? []), { file, specifier, to }]);
    }
  }
  for (const loop of foldersInLoops(edges)) {
    for (const from of loop) {
      for (const [to, imports] of edges.get(from) ?? []) {
        if (!loop.has(to)) continue;
        const back = pathBetween(edges, to, from, loop);
        for (const { file, specifier } of imports) {
          upward.push({
            file,
            specifier,
            reason: `${from}/ imports ${to}/ while ${back.map((folder) => `${folder}/`).join(' imports ')}: two features never import each other`,
          });
        }
      }
    }
  }
  return upward.sort((a, b) => a.file.localeCompare(b.file) || a.reason.localeCompare(b.reason));
}

/** The strongly connected groups of more than one folder (Tarjan). */
function foldersInLoops(edges: Map<string, Map<string, FolderImport[]>>): Array<Set<string>> {
  const index = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: Array<Set<string>> = [];
  const visit = (folder: string): void => {
    index.set(folder, index.size);
    lowest.set(folder, index.get(folder)!);
    stack.push(folder);
    onStack.add(folder);
    for (const next of edges.get(folder)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowest.set(folder, Math.min(lowest.get(folder)!, lowest.get(next)!));
      } else if (onStack.has(next)) {
        lowest.set(folder, Math.min(lowest.get(folder)!, index.get(next)!));
      }
    }
    if (lowest.get(folder) !== index.get(folder)) return;
    const group = new Set<string>();
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.add(member);
    } while (member !== folder);
    if (group.size > 1) loops.push(group);
  };
  for (const folder of edges.keys()) if (!index.has(folder)) visit(folder);
  return loops;
}

/** The shortest chain of folder imports from `start` to `goal` inside `loop`. */
function pathBetween(
  edges: Map<string, Map<string, FolderImport[]>>,
  start: string,
  goal: string,
  loop: Set<string>,
): string[] {
  const cameFrom = new Map<string, string>([[start, start]]);
  const queue = [start];
  while (queue.length > 0) {
    const folder = queue.shift()!;
    if (folder === goal) break;
    for (const next of edges.get(folder)?.keys() ?? []) {
      if (loop.has(next) && !cameFrom.has(next)) {
        cameFrom.set(next, folder);
        queue.push(next);
      }
    }
  }
  const chain = [goal];
  while (chain[0] !== start) chain.unshift(cameFrom.get(chain[0])!);
  return chain;
}

/** A file that imports itself round a loop of other files, and the loop. */
export interface ImportCircle {
  /** The files of the loop, each importing the next and the last the first (repository paths). */
  files: string[];
}

/** `@app/<lib>` is `libs/<lib>/src` (tsconfig's paths). */
function resolveAnyImport(
  file: string,
  specifier: string,
  files: ReadonlyMap<string, string>,
): string | undefined {
  const lib = /^@app\/([^/]+)(\/.*)?$/.exec(specifier);
  if (lib) return resolveImport(file, `./${lib[1]}/src${lib[2] ?? ''}`, files, 'libs/');
  return resolveImport(file, specifier, files);
}

/**
 * Every loop of imports between files among `files` (the sources of the apps and libs: any
 * number of trees), whatever the folders: a loop inside one feature or one lib is still files
 * that cannot be read, tested or loaded one without the other. Type-only imports count; specs
 * are left out. One circle per strongly connected group, its files in import order.
 */
export function findImportCircles(files: ReadonlyMap<string, string>): ImportCircle[] {
  const edges = new Map<string, Map<string, FolderImport[]>>();
  for (const [file, text] of files) {
    if (!file.endsWith('.ts') || isSpec(file)) continue;
    const byTarget = new Map<string, FolderImport[]>();
    edges.set(file, byTarget);
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      const target = resolveAnyImport(file, specifier, files);
      if (target === undefined || target === file || !files.has(target) || isSpec(target)) {
        continue;
      }
      byTarget.set(target, [...(byTarget.get(target) ?? []), { file, specifier, to: target }]);
    }
  }
  return foldersInLoops(edges)
    .map((loop) => {
      const [first] = [...loop].sort();
      const next = [...(edges.get(first)?.keys() ?? [])].find((to) => loop.has(to))!;
      return { files: [first, ...pathBetween(edges, next, first, loop).slice(0, -1)] };
    })
    .sort((a, b) => a.files[0].localeCompare(b.files[0]));
}

/**
 * The libs stand in layers (ARCHITECTURE.md, the libraries' layers): each imports only the libs listed
 * for it, and those only through `@app/<lib>`. api-basics, the generic pieces (the OpenAPI
 * decorator bridge, ErrorBody, address and text rules), is at the bottom; fleet-domain and
 * daemon stand side by side on it, neither importing the other. A new lib is added here.
 */
export const LIBRARY_LAYERS: Readonly<Record<string, readonly string[]>> = {
  'api-basics': [],
  'fleet-domain': ['api-basics'],
  daemon: ['api-basics'],
};

/** The lib a repository path lies in (undefined outside libs/). */
function libOf(file: string): string | undefined {
  return /^libs\/([^/]+)\//.exec(file)?.[1];
}

/**
 * Every import among `files` (the sources of the libs, or of everything) by which a lib reaches
 * a lib it does not stand on (LIBRARY_LAYERS), by `@app/` or by path, type-only too. Specs
 * count as well: a lib's specs load only what the lib may.
 */
export function findLibraryLayerImports(files: ReadonlyMap<string, string>): UpwardImport[] {
  const found: UpwardImport[] = [];
  for (const [file, text] of files) {
    const lib = libOf(file);
    if (lib === undefined || !file.endsWith('.ts')) continue;
    const allowed = LIBRARY_LAYERS[lib];
    if (allowed === undefined) {
      found.push({
        file,
        specifier: '',
        reason: `the lib ${lib} has no place among the layers: add it to LIBRARY_LAYERS (test/architecture/app-imports.ts)`,
      });
      continue;
    }
    for (const { fileName: specifier } of ts.preProcessFile(text, true, true).importedFiles) {
      const target = resolveAnyImport(file, specifier, files);
      const to = target === undefined ? undefined : libOf(target);
      if (to === undefined || to === lib || allowed.includes(to)) continue;
      found.push({
        file,
        specifier,
        reason: `the lib ${lib} imports the lib ${to}: ${lib} may import ${allowed.length > 0 ? `only ${allowed.map((name) => `@app/${name}`).join(', ')}` : 'no other lib'}`,
      });
    }
  }
  return found.sort(
    (a, b) => a.file.localeCompare(b.file) || a.specifier.localeCompare(b.specifier),
  );
}

/** The most lines a hand-written source file of an app or lib may have (ARCHITECTURE.md). */
export const MAX_SOURCE_LINES = 400;

/** A hand-written source file longer than MAX_SOURCE_LINES. */
export interface LongFile {
  file: string;
  lines: number;
}

/**
 * The files of `files` (path → text) longer than MAX_SOURCE_LINES, but specs and generated
 * clients (`*.spec.ts`, `*generated*`): a longer file is split along its concerns.
 */
export function findLongFiles(files: ReadonlyMap<string, string>): LongFile[] {
  const long: LongFile[] = [];
  for (const [file, text] of files) {
    const name = file.slice(file.lastIndexOf('/') + 1);
    if (name.endsWith('.spec.ts') || name.includes('generated')) continue;
    // As `wc -l` counts: newlines.
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_SOURCE_LINES) long.push({ file, lines });
  }
  return long.sort((a, b) => b.lines - a.lines);
}
