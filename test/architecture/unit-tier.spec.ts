import { Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { failedTestLogs } from '../support/unit-environment';

describe('the unit tier', () => {
  const logs = (globalThis as { __unitSpecLogs?: string[] }).__unitSpecLogs;

  it("collects what Nest's Logger says instead of printing it", () => {
    const write = jest.spyOn(process.stdout, 'write');
    new Logger('QemuDriver').warn('vm vm-1: QEMU: could not start under KVM');
    expect(logs).toContain('WARN [QemuDriver] vm vm-1: QEMU: could not start under KVM');
    expect(write).not.toHaveBeenCalled();
    write.mockRestore();
  });

  it('leaves a spy on Logger seeing every line, as specs that assert a warning use it', () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    new Logger('HostFacts').warn('cannot read ram');
    expect(warn).toHaveBeenCalledWith('cannot read ram');
    warn.mockRestore();
  });

  it('places an error at its line and column of the TypeScript source (test/support/script-cache.runtime.cjs)', () => {
    const error = new Error('placed');
    const marker = ['new Error(', "'placed')"].join('');
    const lines = readFileSync(__filename, 'utf8').split('\n');
    const line = lines.findIndex((text) => text.includes(marker));
    const column = lines[line].indexOf('new Error');
    expect(error.stack?.split('\n')[1]).toContain(`unit-tier.spec.ts:${line + 1}:${column + 1})`);
  });

  it('compiles the modules of a spec as scripts V8 keeps on Node 20 (jest compiles them itself from Node 22 on)', () => {
    const marked = (globalThis as Record<symbol, unknown>)[Symbol.for('ppn.script-cache-runtime')];
    expect(marked).toBe(Number(process.versions.node.split('.')[0]) < 22 ? true : undefined);
  });

  it('prints what a failed test logged, and nothing for one that logged nothing', () => {
    expect(failedTestLogs('refuses a bad disk', ['WARN [VmFiles] vm vm-1: no space'])).toBe(
      'What "refuses a bad disk" logged:\n  WARN [VmFiles] vm vm-1: no space\n',
    );
    expect(failedTestLogs('quiet', [])).toBeUndefined();
  });
});
