import { colourFor, paint } from './style';
import { formatBar, formatFields, formatTable } from './table';

// eslint-disable-next-line no-control-regex -- the colour codes are what this looks for
const ANSI = /\u001b\[\d+m/g;

describe('formatTable', () => {
  const columns = [
    { header: 'NODE' },
    { header: 'RAM', align: 'right' as const },
    { header: 'KVM' },
  ];
  const rows = [
    [{ text: 'node-a', style: 'cyan' as const }, '512 MB', 'yes'],
    ['n-b', '16384 MB', { text: 'no', style: 'dim' as const }],
  ];

  it('aligns columns two spaces apart, numbers to the right, no trailing spaces', () => {
    expect(formatTable(columns, rows, false)).toBe(
      ['NODE         RAM  KVM', 'node-a    512 MB  yes', 'n-b     16384 MB  no'].join('\n'),
    );
  });

  it('colours only when told, and the alignment ignores the colour codes', () => {
    const coloured = formatTable(columns, rows, true);
    expect(coloured).toContain('\u001b[1mNODE\u001b[22m');
    expect(coloured).toContain('\u001b[36mnode-a\u001b[39m');
    expect(coloured.replace(ANSI, '')).toBe(formatTable(columns, rows, false));
    expect(formatTable(columns, rows, false)).not.toMatch(ANSI);
  });
});

describe('formatFields', () => {
  it('aligns the values after the labels', () => {
    expect(
      formatFields(
        [
          ['node', 'a'],
          ['last heartbeat', 'now'],
        ],
        false,
      ),
    ).toBe('node:            a\nlast heartbeat:  now');
  });
});

describe('formatBar', () => {
  it('fills the used share of used + free', () => {
    expect(formatBar(1024, 3072, 20, false)).toBe('[#####...............]');
    expect(formatBar(0, 4096, 10, false)).toBe('[..........]');
    expect(formatBar(4096, 0, 10, false)).toBe('[##########]');
    expect(formatBar(0, 0, 4, false)).toBe('[....]');
  });

  it('is green, yellow from 75 %, red from 90 % on a terminal', () => {
    expect(formatBar(1, 3, 4, true)).toContain('\u001b[32m');
    expect(formatBar(3, 1, 4, true)).toContain('\u001b[33m');
    expect(formatBar(9, 1, 10, true)).toContain('\u001b[31m');
  });
});

describe('colourFor', () => {
  it('colours a terminal only, unless NO_COLOR is set (to anything but empty) or TERM is dumb', () => {
    expect(colourFor({ isTTY: true }, {})).toBe(true);
    expect(colourFor({ isTTY: false }, {})).toBe(false);
    expect(colourFor({}, {})).toBe(false);
    expect(colourFor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colourFor({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
    expect(colourFor({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
  });

  it('paint leaves text alone without colour', () => {
    expect(paint('x', 'red', false)).toBe('x');
    expect(paint('x', undefined, true)).toBe('x');
  });
});
