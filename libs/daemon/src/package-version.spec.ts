import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageVersion } from './package-version';

describe('packageVersion', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'package-version-'));
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("is the repository's version, from the sources", () => {
    const { version } = JSON.parse(
      readFileSync(join(__dirname, '../../../package.json'), 'utf8'),
    ) as { version: string };
    expect(packageVersion()).toBe(version);
  });

  it('is the version of the nearest package.json above, as in an installed package', () => {
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '9.8.7' }));
    const deep = join(dir, 'apps', 'fleet', 'src', 'metrics');
    mkdirSync(deep, { recursive: true });
    expect(packageVersion(deep)).toBe('9.8.7');
  });

  it('says which package.json has no version', () => {
    writeFileSync(join(dir, 'package.json'), '{}');
    expect(() => packageVersion(dir)).toThrow(`${join(dir, 'package.json')} has no version`);
  });
});
