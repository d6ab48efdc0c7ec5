import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { VM_TRANSITIONS } from '../../apps/vm-host/src/vms/life-cycle/vm-transitions';

const ROOT = join(__dirname, '..', '..');

function read(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

/** Every file of the repository (but node_modules, dist and dot folders), relative to it. */
function repositoryFiles(): string[] {
  return readdirSync(ROOT, { recursive: true, encoding: 'utf8' })
    .map((file) => file.split('\\').join('/'))
    .filter((file) => !/^(node_modules|dist|\.)|\/(node_modules|\.)/.test(file));
}

/** The checklists of CONTRIBUTING.md: each `## ` heading after "How to work here", its items. */
function checklists(markdown: string): Map<string, string[]> {
  const lists = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) {
      current = heading[1] === 'How to work here' ? undefined : [];
      if (current) lists.set(heading[1], current);
    } else if (current && line.startsWith('- [ ] ')) current.push(line);
  }
  return lists;
}

/** The repository paths a text names in code spans: `apps/...`, `docs/x.md`, `README.md`. */
function namedPaths(markdown: string): string[] {
  const spans = [...markdown.replace(/\n\s+/g, ' ').matchAll(/`([^`\s]+)`/g)].map(
    (match) => match[1],
  );
  return [
    ...new Set(
      spans.filter((span) => /^(apps|libs|test|deploy|docs|openapi)\/|^[A-Z]+\.md$/.test(span)),
    ),
  ];
}

/** A path with `<placeholder>` or `*` parts as a pattern: each any one name. */
function pathPattern(path: string): RegExp {
  const escaped = path.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/<[a-z-]+>|\*/g, '[^/]+')}$`);
}

/** A metric as its exposition and rules write it, back to the name it is registered under. */
function metricName(series: string): string {
  return series.replace(/_(bucket|count|sum)$/, '');
}

describe('CONTRIBUTING.md', () => {
  const text = read('CONTRIBUTING.md');

  it('has a checklist for each kind of change the developers asked for', () => {
    expect([...checklists(text).keys()]).toEqual([
      'A field of a VM',
      'A CLI command',
      'An operations route',
      'A store adapter',
      'A metric and its alert',
      'A setting',
      "A phase of the agent's VM life cycle",
    ]);
    for (const [kind, items] of checklists(text)) {
      expect({ kind, items: items.length > 0 }).toEqual({ kind, items: true });
    }
  });

  it('names files that exist, and a pattern with <placeholders> that matches one', () => {
    const files = repositoryFiles();
    const paths = namedPaths(text);
    expect(paths.length).toBeGreaterThan(40);
    const missing = paths.filter((path) =>
      /[<*]/.test(path)
        ? !files.some((file) => pathPattern(path).test(file))
        : !existsSync(join(ROOT, path)),
    );
    expect(missing).toEqual([]);
  });

  it('sends a VM field through canonicalCreateRequest, where the create request hashes it', () => {
    const vmField = checklists(text).get('A field of a VM')!.join('\n');
    expect(vmField).toContain('`canonicalCreateRequest`');
    expect(read('libs/fleet-domain/src/idempotency.ts')).toContain(
      'export function canonicalCreateRequest(',
    );
  });

  it("draws in ARCHITECTURE.md the agent's life-cycle table the code has, move for move", () => {
    const architecture = read('ARCHITECTURE.md');
    const start = architecture.indexOf('| from \\ operation |');
    expect(start).toBeGreaterThan(0);
    const rows = architecture.slice(start).split('\n\n')[0].split('\n');
    const operations = rows[0]
      .split('|')
      .slice(2, -1)
      .map((cell) => cell.trim());
    const drawn = rows.slice(2).map((row) => {
      const [phase, ...cells] = row
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      const moves = Object.fromEntries(
        cells
          .map((cell, index) => [operations[index], cell.split(' (')[0]] as const)
          .filter(([, to]) => to !== '-'),
      );
      return [phase, moves] as const;
    });
    expect(Object.fromEntries(drawn)).toEqual(VM_TRANSITIONS);
  });

  it('is linked from the README and docs/development.md', () => {
    expect(read('README.md')).toContain('(CONTRIBUTING.md)');
    expect(read('docs/development.md')).toContain('(../CONTRIBUTING.md)');
  });
});

describe('the alerts and the dashboard, against docs/operating.md', () => {
  const operating = read('docs/operating.md');
  const documented = new Set(
    [...operating.matchAll(/^\| `(ppn_[a-z_]+)/gm)].map((match) => match[1]),
  );
  const rules = read('deploy/prometheus/ppn-fleet.rules.yml');

  it('documents every alert of the rules', () => {
    const alerts = [...rules.matchAll(/- alert: (\w+)/g)].map((match) => match[1]);
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.filter((alert) => !operating.includes(alert))).toEqual([]);
  });

  it('reads only metrics that have a row in the metrics table', () => {
    const read = (source: string): string[] => [
      ...new Set([...source.matchAll(/\bppn_[a-z_]+/g)].map((match) => metricName(match[0]))),
    ];
    const used = [
      ...read(rules),
      ...read(readFileSync(join(ROOT, 'deploy/grafana/ppn-fleet.json'), 'utf8')),
    ];
    expect(documented.size).toBeGreaterThan(0);
    expect([...new Set(used)].filter((metric) => !documented.has(metric))).toEqual([]);
  });
});
