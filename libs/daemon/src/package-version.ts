import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The version of the checkout or package this code runs from: `version` of the first
 * package.json above `from` (the repository's in the sources and in dist/, the one each Debian
 * package ships beside its code, the npm package's own once installed). What build_info shows.
 */
export function packageVersion(from = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const { version } = JSON.parse(readFileSync(candidate, 'utf8')) as { version?: unknown };
      if (typeof version !== 'string') throw new Error(`${candidate} has no version`);
      return version;
    }
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}
