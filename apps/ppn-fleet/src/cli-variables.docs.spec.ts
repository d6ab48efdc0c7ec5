import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaredVariables, variableNames } from '@app/daemon';
import { ConnectionConfig, DEFAULT_ENDPOINT } from './api/connection.config';
import { NodeSecretConfig } from './node-token/node-token.command';
import { TenantSecretConfig } from './tenant-token/tenant-token.command';

/** The "ppn-fleet settings" section of docs/reference.md, up to the next heading. */
function cliSection(): string {
  const page = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'reference.md'), 'utf8');
  const start = page.indexOf('\n## ppn-fleet settings\n');
  expect(start).toBeGreaterThan(0);
  const end = page.slice(start + 1).search(/\n##+ /);
  return page.slice(start, end < 0 ? undefined : start + 1 + end);
}

describe("ppn-fleet's variables as documented", () => {
  it('docs/reference.md "ppn-fleet settings" names exactly the variables the CLI reads', () => {
    const documented = new Set([...cliSection().matchAll(/`(VM_[A-Z0-9_]+)`/g)].map((m) => m[1]));
    const read = [
      ...variableNames(ConnectionConfig),
      ...variableNames(NodeSecretConfig),
      ...variableNames(TenantSecretConfig),
    ];
    expect([...documented].sort()).toEqual(read.sort());
  });

  it('documents the default endpoint the code applies', () => {
    expect(declaredVariables(ConnectionConfig).find((v) => v.name === 'VM_FLEET_ENDPOINT')).toEqual(
      expect.objectContaining({ default: DEFAULT_ENDPOINT }),
    );
    expect(cliSection()).toContain(`default \`${DEFAULT_ENDPOINT}\``);
  });
});
