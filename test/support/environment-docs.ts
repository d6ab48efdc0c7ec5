import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { declaredVariables, variableNames } from '@app/daemon';

const ROOT = join(__dirname, '..', '..');
const VARIABLE = /`(VM_[A-Z0-9_]+)`/g;
const ASSIGNMENT = /^\s*(#?)\s*(VM_[A-Z0-9_]+)=(.*)$/;

/** A variable a section of the docs names, with its Default cell when its table has one. */
interface DocumentedVariable {
  name: string;
  /** The Default cell as written (backticks kept); undefined outside a table with one. */
  default?: string;
}

function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim());
}

/** The lines under `heading` (a `## ` line), up to the next `## ` heading. */
function section(markdown: string, heading: string, document: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.trim() === heading);
  if (start < 0) throw new Error(`${document} has no heading "${heading}"`);
  const end = lines.findIndex((line, index) => index > start && /^## /.test(line));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The pages an operator reads: README.md, ARCHITECTURE.md and every docs/*.md. */
export function documentationPages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md', ...docs];
}

/**
 * The variables a section of `page` documents for operators: the first cell of each table whose
 * header starts `| Variable |`, and each `NAME=value` line of its code blocks. The whole page
 * when no heading is given.
 */
function documentedVariables(page: string, heading?: string): DocumentedVariable[] {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  const lines = heading ? section(markdown, heading, page) : markdown.split('\n');
  const found: DocumentedVariable[] = [];
  let header: string[] | undefined;
  let inCode = false;
  for (const line of lines) {
    if (/^\s*```/.test(line)) inCode = !inCode;
    const assignment = inCode ? ASSIGNMENT.exec(line) : null;
    if (assignment && assignment[1] === '') found.push({ name: assignment[2] });
    if (inCode || !/^\s*\|/.test(line)) {
      header = undefined;
      continue;
    }
    if (!header) {
      header = cells(line);
      continue;
    }
    if (/^\s*\|[\s|:-]+\|\s*$/.test(line) || !/^variable$/i.test(header[0])) continue;
    const row = cells(line);
    const defaultColumn = header.findIndex((cell) => /^default$/i.test(cell));
    for (const [, name] of row[0].matchAll(VARIABLE)) {
      found.push({ name, default: defaultColumn < 0 ? undefined : row[defaultColumn] });
    }
  }
  return found;
}

/** One `NAME=value` line of an env example, commented out (`#NAME=`) or set. */
interface ExampleVariable {
  name: string;
  value: string;
  commented: boolean;
}

/** The variables `deploy/systemd/<file>` names, and its whole text (for names that must not be in it). */
function envExampleVariables(file: string): { variables: ExampleVariable[]; text: string } {
  const text = readFileSync(join(ROOT, 'deploy', 'systemd', file), 'utf8');
  const variables = text.split('\n').flatMap((line) => {
    const match = ASSIGNMENT.exec(line);
    return match ? [{ name: match[2], value: match[3], commented: match[1] === '#' }] : [];
  });
  return { variables, text };
}

/** The product's contract, kept beside the clone in `../shared/` (CI has it; a plain clone not). */
const CONTRACT_NAME = '../shared/spec/contract.md';
const CONTRACT = join(ROOT, CONTRACT_NAME);

/**
 * The variables the contract gives `daemon`: for the agent those of its own section, and for
 * either the rows of the "Beyond the how-tos" table naming it or `both` (`NAME` / `_FILE` is
 * both names). Undefined when the contract is not on this machine.
 */
function contractVariables(daemon: 'controller' | 'agent'): string[] | undefined {
  if (!existsSync(CONTRACT)) return undefined;
  const markdown = readFileSync(CONTRACT, 'utf8');
  const names = new Set<string>();
  if (daemon === 'agent') {
    for (const line of section(markdown, '## service-vm-host', CONTRACT)) {
      for (const [, name] of line.matchAll(VARIABLE)) names.add(name);
    }
  }
  for (const line of markdown.split('\n')) {
    if (!/^\|\s*`VM_/.test(line)) continue;
    const [first, where] = cells(line);
    if (where !== 'both' && where !== daemon) continue;
    for (const [, name] of first.matchAll(VARIABLE)) {
      names.add(name);
      if (first.includes('`_FILE`')) names.add(`${name}_FILE`);
    }
  }
  return [...names];
}

/** Where one daemon's variables are documented, and what its contract asks that is not built. */
export interface VariableDocs {
  daemon: 'controller' | 'agent';
  /** The page (from the repository's root) and its heading whose table(s) and `NAME=value` lines list the variables. */
  page: string;
  heading: string;
  /** The env example in deploy/systemd/. */
  envExample: string;
  /** Contract variables for a later issue: each must be undeclared, so the list is kept honest. */
  notYetBuilt?: string[];
}

function sorted(names: Iterable<string>): string[] {
  return [...names].sort();
}

/**
 * The tests that the docs and the env example document exactly the variables `configClass`
 * declares (so a new one cannot be added to the code alone), that test-only hooks are documented
 * nowhere for operators, and that the contract's variables are all declared.
 */
export function describeVariableDocs(configClass: new () => object, docs: VariableDocs): void {
  const operatorNames = variableNames(configClass);
  const variables = declaredVariables(configClass);
  const testOnly = variables.filter((variable) => variable.testOnly).map(({ name }) => name);
  const requiredNames = new Set(
    variables
      .filter((variable) => variable.required)
      .flatMap(({ name, secret }) => (secret ? [name, `${name}_FILE`] : [name])),
  );
  const withDefault = variables.filter((variable) => variable.default !== undefined);

  describe(`${configClass.name}'s variables as documented`, () => {
    it(`${docs.page} "${docs.heading}" names exactly the variables it declares`, () => {
      expect(sorted(documentedVariables(docs.page, docs.heading).map(({ name }) => name))).toEqual(
        sorted(operatorNames),
      );
    });

    it(`deploy/systemd/${docs.envExample} names exactly them, the optional ones commented out`, () => {
      const { variables: example } = envExampleVariables(docs.envExample);
      expect(sorted(example.map(({ name }) => name))).toEqual(sorted(operatorNames));
      for (const { name, commented } of example) {
        expect({ name, commented }).toEqual({ name, commented: !requiredNames.has(name) });
      }
    });

    it('documents each default as the one the code applies', () => {
      const readme = documentedVariables(docs.page, docs.heading);
      const { variables: example } = envExampleVariables(docs.envExample);
      for (const { name, default: value } of withDefault) {
        const documented = readme.find((variable) => variable.name === name)?.default;
        expect({ name, readme: documented }).toEqual({ name, readme: `\`${String(value)}\`` });
        const shown = example.find((variable) => variable.name === name)?.value;
        expect({ name, example: shown }).toEqual({ name, example: String(value) });
      }
    });

    it(`documents no test-only hook (${testOnly.join(', ') || 'none'}) as an operator setting`, () => {
      const documented = new Set(
        documentationPages().flatMap((page) => documentedVariables(page).map(({ name }) => name)),
      );
      const { text } = envExampleVariables(docs.envExample);
      for (const name of testOnly) {
        expect({ name, inDocsTables: documented.has(name) }).toEqual({ name, inDocsTables: false });
        expect({ name, inEnvExample: text.includes(name) }).toEqual({ name, inEnvExample: false });
      }
    });

    // One test with or without the contract, never skipped: the list of variables not yet built
    // is checked against the code always, and against the contract where it is beside the clone.
    // The title says which ran.
    const notYetBuilt = docs.notYetBuilt ?? [];
    const listed = notYetBuilt.join(', ') || 'none';
    it(
      existsSync(CONTRACT)
        ? `declares every variable ${CONTRACT_NAME} gives the ${docs.daemon} but those not yet built (${listed})`
        : `declares none of the variables not yet built (${listed}); ${CONTRACT_NAME} is not beside the clone to check the rest`,
      () => {
        const all = new Set([...operatorNames, ...testOnly]);
        expect(sorted(notYetBuilt.filter((name) => all.has(name)))).toEqual([]);
        const contract = contractVariables(docs.daemon);
        if (contract === undefined) return;
        const undeclared = contract.filter((name) => !all.has(name));
        expect(sorted(undeclared)).toEqual(sorted(notYetBuilt));
      },
    );
  });
}
