import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeScratchFolders, scratchFolder } from '../../../../test/support/scratch-folders';
import { AuditEntry, AuditLog, NONE_LINES_PER_MINUTE } from './audit-log';

describe('AuditLog', () => {
  afterAll(() => removeScratchFolders());

  function refused(from: string, atMs: number): AuditEntry {
    return {
      time: new Date(atMs).toISOString(),
      who: 'none',
      listener: 'api',
      method: 'POST',
      path: '/v1/vms',
      status: 401,
      from,
    };
  }

  it("writes an address's unauthenticated lines up to its limit a minute, then says how many were left out", () => {
    const path = join(scratchFolder('ppn-audit-'), 'audit.log');
    const audit = new AuditLog(path);
    const start = Date.parse('2026-12-05T08:00:00.000Z');
    for (let i = 0; i < 1_000; i++) audit.write(refused('10.0.0.9', start + i));
    audit.write(refused('10.0.0.10', start));
    audit.write({ ...refused('10.0.0.9', start + 5), who: 'operator' });
    audit.write(refused('10.0.0.9', start + 61_000));
    audit.onApplicationShutdown();
    const lines = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditEntry);
    const of9 = lines.filter(({ from, who }) => from === '10.0.0.9' && who === 'none');
    expect(of9).toHaveLength(NONE_LINES_PER_MINUTE + 2);
    expect(of9.at(-2)).toMatchObject({
      path: '(refused requests left out)',
      left_out: 1_000 - NONE_LINES_PER_MINUTE,
    });
    expect(lines.filter(({ from }) => from === '10.0.0.10')).toHaveLength(1);
    expect(lines.filter(({ who }) => who === 'operator')).toHaveLength(1);
  });
});
