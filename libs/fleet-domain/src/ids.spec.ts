import { NO_CONTROL_CHARACTERS_PATTERN, isIpAddressLiteral, isPrintableText } from './ids';

describe('isPrintableText', () => {
  it.each([
    ['a bidi override (U+202E)', 'host\u202Egnp'],
    ['a bidi isolate (U+2066)', 'host\u2066x'],
    ['a zero-width space (U+200B)', 'ho\u200Bst'],
    ['a byte order mark (U+FEFF)', '\uFEFFhost'],
    ['a tag character (U+E0041)', 'host\u{E0041}'],
    ['a bell (U+0007)', 'bell\u0007'],
    ['a C1 control (U+0085)', 'next\u0085line'],
    ['a line separator (U+2028)', 'a\u2028b'],
  ])('refuses %s', (_what, text) => {
    expect(isPrintableText(text, 253)).toBe(false);
  });

  it('takes names in any script, within the length', () => {
    expect(isPrintableText('café-büro-東京', 253)).toBe(true);
    expect(isPrintableText('x'.repeat(253), 253)).toBe(true);
    expect(isPrintableText('x'.repeat(254), 253)).toBe(false);
    expect(isPrintableText('', 253)).toBe(false);
  });
});

describe('NO_CONTROL_CHARACTERS_PATTERN', () => {
  it('agrees with isPrintableText on every character of the Basic Multilingual Plane', () => {
    const pattern = new RegExp(NO_CONTROL_CHARACTERS_PATTERN);
    const disagree: string[] = [];
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const text = `a${String.fromCharCode(code)}`;
      if (pattern.test(text) !== isPrintableText(text, 10)) disagree.push(code.toString(16));
    }
    expect(disagree).toEqual([]);
  });
});

describe('isIpAddressLiteral', () => {
  // Link-local (cloud metadata), unspecified, multicast or broadcast, in any spelling.
  it.each([
    '169.254.169.254',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '0::ffff:a9fe:a9fe',
    '0:0:0:0:0:ffff:a9fe:a9fe',
    '0000:0000:0000:0000:0000:FFFF:A9FE:A9FE',
    '::169.254.169.254',
    '::a9fe:a9fe',
    '::ffff:0:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    'fe80::1',
    'FEBF::1',
    '0.0.0.0',
    '::',
    '0::0',
    '0:0:0:0:0:0:0:0',
    '::ffff:0.0.0.0',
    '::ffff:0:0',
    '0:0:0:0:0:ffff:0:0',
    '::ffff:e000:1',
    '0:0:0:0:0:ffff:ffff:ffff',
    '::255.255.255.255',
    'ff02::1',
    'FF05::2',
    '224.0.0.1',
    '255.255.255.255',
  ])('refuses %s', (text) => {
    expect(isIpAddressLiteral(text)).toBe(false);
  });

  it.each(['10.201.0.2', '127.0.0.1', '::1', 'fd00::2', '::ffff:10.0.0.2', '0:0:0:0:0:ffff:a00:2'])(
    'takes %s, a unicast address a node may own',
    (text) => {
      expect(isIpAddressLiteral(text)).toBe(true);
    },
  );
});
