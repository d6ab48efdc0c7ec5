import { Logger } from '@nestjs/common';
import { DaemonLogger } from './daemon-logger';

describe('DaemonLogger', () => {
  let written: string;

  beforeEach(() => {
    written = '';
    const capture = (chunk: string | Uint8Array): boolean => {
      written += String(chunk);
      return true;
    };
    jest.spyOn(process.stdout, 'write').mockImplementation(capture);
    jest.spyOn(process.stderr, 'write').mockImplementation(capture);
    Logger.overrideLogger(new DaemonLogger({ colors: false }));
  });

  afterEach(() => {
    jest.restoreAllMocks();
    Logger.overrideLogger(false);
  });

  it('writes a message with newlines and other control characters as one line', () => {
    const forged = 'evil\n[Nest] 1  - 08/06/2026, 12:00:00 PM     LOG [Nodes] node admin joined';
    new Logger('Nodes').log(`node n1 joined (host ${forged}\r\u0007\u2028)`);
    new Logger('Nodes').warn(`node n1: ${forged}`);
    new Logger('HttpErrors').error(`Error: boom\n    at ${forged}`);
    const lines = written.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('(host evil\\n[Nest] 1  -');
    expect(lines[0]).toContain('\\r\\u0007\\u2028)');
    for (const line of lines) expect(line).toMatch(/^\[Nest\] \d+ +- /);
  });
});
