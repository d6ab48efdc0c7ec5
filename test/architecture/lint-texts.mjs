// Lints source texts as if they sat at the given paths, with the repository's own
// eslint.config.mjs, and prints what its boundary rules (no-restricted-*) say. Run as a child
// process by boundaries.spec.ts: jest cannot load an ES module config, and the texts never
// touch the tree. Type information is off (the files do not exist); no boundary rule needs it.
// stdin: [{ "filePath": "libs/...", "code": "..." }]; stdout: [{ "filePath", "messages" }].
import { ESLint } from 'eslint';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

const repository = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({
  cwd: repository,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
  ruleFilter: ({ ruleId }) => ruleId.startsWith('no-restricted-'),
});

const results = [];
for (const { filePath, code } of JSON.parse(readFileSync(0, 'utf8'))) {
  const [result] = await eslint.lintText(code, { filePath: path.join(repository, filePath) });
  results.push({
    filePath,
    messages: result.messages.map(({ ruleId, message }) => ({ ruleId, message })),
  });
}
process.stdout.write(JSON.stringify(results));
