import { stripVTControlCharacters } from 'node:util';
import { DaemonLogger, jsonLogLine, logColours, logFormatOf } from './daemon-logger';

describe('jsonLogLine', () => {
  const now = new Date('2026-08-06T12:00:00.123Z');

  it('gives time (RFC 3339), level in pipeline words, msg and context', () => {
    expect(jsonLogLine({ level: 'log', message: 'started', context: 'Fleet' }, now)).toEqual({
      time: '2026-08-06T12:00:00.123Z',
      level: 'info',
      msg: 'started',
      context: 'Fleet',
    });
    expect(jsonLogLine({ level: 'warn', message: 'slow' }, now).level).toBe('warn');
  });

  it.each([
    ['node compute-01 joined from 10.8.0.21 (host a, boot b)', 'compute-01', undefined],
    ['node compute-01: ignored heartbeat stamped ...', 'compute-01', undefined],
    ['spawn on node compute-01 failed: ECONNREFUSED', 'compute-01', undefined],
    [
      'vm vm-0123456789abcdef (web, 1024 MB) placed on node n.2 for tenant t1',
      'n.2',
      'vm-0123456789abcdef',
    ],
    ['vm vm-0123456789abcdef: QEMU pid 42 ignored quit', undefined, 'vm-0123456789abcdef'],
    ['node compute-01.', 'compute-01', undefined],
    ['no node has 1536 MB free', undefined, undefined],
    ['dropped 25 nodes silent for more than 30 s in one sweep', undefined, undefined],
  ])('finds the ids a line is about: %s', (message, nodeId, vmId) => {
    const line = jsonLogLine({ level: 'log', message }, now);
    expect(line.node_id).toBe(nodeId);
    expect(line.vm_id).toBe(vmId);
  });

  it("gives every line of the agent its node's id", () => {
    expect(jsonLogLine({ level: 'log', message: 'SIGTERM received', nodeId: 'n1' }).node_id).toBe(
      'n1',
    );
  });

  it('keeps a stack as its own field', () => {
    const line = jsonLogLine({ level: 'error', message: 'boom', stack: 'Error: boom\n    at x' });
    expect(line.stack).toBe('Error: boom\n    at x');
  });
});

describe('logFormatOf', () => {
  it('is json only when VM_LOG_FORMAT says json', () => {
    expect(logFormatOf({ VM_LOG_FORMAT: 'json' })).toBe('json');
    expect(logFormatOf({ VM_LOG_FORMAT: ' json ' })).toBe('json');
    expect(logFormatOf({ VM_LOG_FORMAT: 'text' })).toBe('text');
    expect(logFormatOf({})).toBe('text');
  });
});

describe('DaemonLogger', () => {
  let written: string[];

  beforeEach(() => {
    written = [];
    for (const stream of [process.stdout, process.stderr]) {
      jest.spyOn(stream, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      });
    }
  });

  afterEach(() => jest.restoreAllMocks());

  it('in json format writes each line as one JSON object, errors with their stack', () => {
    const logger = new DaemonLogger('json');
    logger.log('node n1 joined from 10.8.0.1', 'Nodes');
    logger.error('sweep failed', 'Error: x\n    at y', 'NodeStaleness');
    expect(written).toHaveLength(2);
    for (const chunk of written) expect(chunk.endsWith('\n')).toBe(true);
    const [joined, failed] = written.map((chunk) => JSON.parse(chunk) as Record<string, unknown>);
    expect(joined).toMatchObject({ level: 'info', context: 'Nodes', node_id: 'n1' });
    expect(failed).toMatchObject({
      level: 'error',
      msg: 'sweep failed',
      stack: 'Error: x\n    at y',
    });
  });

  it('keeps quiet about Nest start-up chatter in either format', () => {
    new DaemonLogger('json').log('AppModule dependencies initialized', 'InstanceLoader');
    new DaemonLogger('text').log('Mapped {/v1/nodes, GET} route', 'RouterExplorer');
    expect(written).toEqual([]);
  });

  it('in text format writes Nest console lines', () => {
    new DaemonLogger('text').log('node n1 joined', 'Nodes');
    // Colours aside (they follow the terminal), a Nest console line.
    const text = stripVTControlCharacters(written.join(''));
    expect(text).toMatch(/^\[Nest\] \d+ {2}- .* {4}LOG \[Nodes\] node n1 joined\n$/);
    expect(() => JSON.parse(text) as unknown).toThrow();
  });
  it('colours text only on a terminal: plain in the journal or a file, with NO_COLOR or TERM=dumb', () => {
    expect(logColours({}, { isTTY: true })).toBe(true);
    expect(logColours({}, { isTTY: false })).toBe(false);
    expect(logColours({}, {})).toBe(false);
    expect(logColours({ NO_COLOR: '1' }, { isTTY: true })).toBe(false);
    expect(logColours({ TERM: 'dumb' }, { isTTY: true })).toBe(false);

    new DaemonLogger('text', undefined, false).warn('node n1 late', 'Nodes');
    new DaemonLogger('text', undefined, false).error('sweep failed', 'Error: x\n    at y', 'Sweep');
    const plain = written.join('');
    expect(plain).toBe(stripVTControlCharacters(plain));
    expect(plain).toContain('WARN [Nodes] node n1 late');

    written.length = 0;
    new DaemonLogger('text', undefined, true).warn('node n1 late', 'Nodes');
    expect(written.join('')).not.toBe(stripVTControlCharacters(written.join('')));
  });

  it('in text format writes a message with newlines and other control characters as one line', () => {
    const forged = 'evil\n[Nest] 1  - 08/06/2026, 12:00:00 PM     LOG [Nodes] node admin joined';
    const logger = new DaemonLogger('text');
    logger.log(`node n1 joined (host ${forged}\r\u0007\u2028)`, 'Nodes');
    logger.warn(`node n1: ${forged}`, 'Nodes');
    logger.error(`Error: boom\n    at ${forged}`, 'HttpErrors');
    const lines = stripVTControlCharacters(written.join('')).trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('(host evil\\n[Nest] 1  -');
    expect(lines[0]).toContain('\\r\\u0007\\u2028)');
    for (const line of lines) expect(line).toMatch(/^\[Nest\] \d+ +- /);
  });

  it('in json format keeps a message with newlines inside one JSON line', () => {
    new DaemonLogger('json').log('node n1 joined (host evil\n{"level":"info"})', 'Nodes');
    expect(written).toHaveLength(1);
    expect(written[0].trimEnd().split('\n')).toHaveLength(1);
    expect((JSON.parse(written[0]) as { msg: string }).msg).toBe(
      'node n1 joined (host evil\n{"level":"info"})',
    );
  });
});
