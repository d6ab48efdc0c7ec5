import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { documentationPages } from '../support/environment-docs';

const ROOT = join(__dirname, '..', '..');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Lines outside fenced code blocks: as written (`raw`) and with inline code spans blanked out. */
function proseLines(markdown: string): Array<{ line: number; text: string; raw: string }> {
  const lines: Array<{ line: number; text: string; raw: string }> = [];
  let inCode = false;
  markdown.split('\n').forEach((text, index) => {
    if (/^\s*```/.test(text)) {
      inCode = !inCode;
      return;
    }
    if (!inCode) lines.push({ line: index + 1, text: text.replace(/`[^`]*`/g, '``'), raw: text });
  });
  return lines;
}

/** The anchors a page's headings make, the second of a kind suffixed `-1`, as GitHub does. */
export function pageAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { raw } of proseLines(markdown)) {
    // The heading as shown: inline code's text counts, its backticks not.
    const heading = /^#{1,6} +(.*?) *#*$/.exec(raw);
    if (!heading) continue;
    const base = headingAnchor(heading[1]);
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}

/** Every relative link of a page (`[text](target)`), web addresses left out. */
export function relativeLinks(markdown: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  for (const { line, text } of proseLines(markdown)) {
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ line, target });
    }
  }
  return links;
}

/** What is wrong with each broken link of `page` (a path from `root`): a missing file or anchor. */
export function brokenLinks(page: string, root = ROOT): string[] {
  const read = (path: string) => readFileSync(path, 'utf8');
  const broken: string[] = [];
  const markdown = read(join(root, page));
  for (const { line, target } of relativeLinks(markdown)) {
    const [path, anchor] = target.split('#', 2);
    const file = path === '' ? join(root, page) : normalize(join(root, dirname(page), path));
    const where = `${page}:${line}: ${target}`;
    if (relative(root, file).startsWith('..') || !existsSync(file)) {
      broken.push(`${where}: no file ${relative(root, file)}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(file).isDirectory() || !file.endsWith('.md')) {
      broken.push(`${where}: an anchor into a file that is not a page`);
    } else if (!pageAnchors(read(file)).has(anchor)) {
      broken.push(`${where}: ${relative(root, file)} has no heading #${anchor}`);
    }
  }
  return broken;
}

describe('links between the documentation pages', () => {
  const pages = documentationPages();

  it('reads README, ARCHITECTURE and the docs/ pages', () => {
    expect(pages.slice(0, 2)).toEqual(['README.md', 'ARCHITECTURE.md']);
    expect(pages.length).toBeGreaterThan(2);
  });

  it.each(pages)('every relative link and #anchor of %s resolves', (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it('README links every docs/ page and ARCHITECTURE.md', () => {
    const linked = new Set(
      relativeLinks(readFileSync(join(ROOT, 'README.md'), 'utf8')).map(
        ({ target }) => target.split('#')[0],
      ),
    );
    for (const page of pages.slice(1))
      expect({ page, linked: linked.has(page) }).toEqual({ page, linked: true });
  });

  it('README stays short: at most 250 lines', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(
      251,
    );
  });

  it('finds a missing file, a missing anchor and one outside the pages, leaving code alone', () => {
    const root = mkdtempSync(join(tmpdir(), 'doc-links-'));
    mkdirSync(join(root, 'docs'));
    writeFileSync(
      join(root, 'README.md'),
      '# R\n\nSee [a](docs/a.md#the-ppn-fleet-cli), [out](../x.md).\n',
    );
    writeFileSync(join(root, 'docs/b.md'), '# B\n');
    writeFileSync(
      join(root, 'docs/a.md'),
      [
        '# A page',
        '## The `ppn-fleet` CLI',
        '## Stopping an agent: its VMs keep running',
        '## Stopping an agent: its VMs keep running',
        'See [b](b.md#nowhere), [b](b.md#b), [c](c.md), [here](#stopping-an-agent-its-vms-keep-running-1),',
        '[gone](#gone), [web](https://example.com/x.md) and `[code](code.md)`.',
        '```',
        '[in a block](block.md)',
        '```',
      ].join('\n'),
    );
    expect(brokenLinks('docs/a.md', root)).toEqual([
      'docs/a.md:5: b.md#nowhere: docs/b.md has no heading #nowhere',
      'docs/a.md:5: c.md: no file docs/c.md',
      'docs/a.md:6: #gone: docs/a.md has no heading #gone',
    ]);
    expect(brokenLinks('README.md', root)).toEqual(['README.md:3: ../x.md: no file ../x.md']);
    rmSync(root, { recursive: true });
    expect(headingAnchor('Metrics and logs (opt-in)')).toBe('metrics-and-logs-opt-in');
    expect(headingAnchor('Node.js versions')).toBe('nodejs-versions');
  });
});
