import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaredVariables, variableNames } from '@app/daemon';
import { ConnectionConfig, DEFAULT_ENDPOINT } from './api/connection.config';
import { NodeSecretConfig } from './node-token/node-token.command';

/** README's "The ppn-fleet CLI" subsection, up to the next heading. */
function cliSection(): string {
  const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
  const start = readme.indexOf('\n### The ppn-fleet CLI\n');
  expect(start).toBeGreaterThan(0);
  const end = readme.slice(start + 1).search(/\n##+ /);
  return readme.slice(start, end < 0 ? undefined : start + 1 + end);
}

describe("ppn-fleet's variables as documented", () => {
  it('README "The ppn-fleet CLI" names exactly the variables the CLI reads', () => {
    const documented = new Set([...cliSection().matchAll(/`(VM_[A-Z0-9_]+)`/g)].map((m) => m[1]));
    const read = [...variableNames(ConnectionConfig), ...variableNames(NodeSecretConfig)];
    expect([...documented].sort()).toEqual(read.sort());
  });

  it('documents the default endpoint the code applies', () => {
    expect(declaredVariables(ConnectionConfig).find((v) => v.name === 'VM_FLEET_ENDPOINT')).toEqual(
      expect.objectContaining({ default: DEFAULT_ENDPOINT }),
    );
    expect(cliSection()).toContain(`default \`${DEFAULT_ENDPOINT}\``);
  });
});
