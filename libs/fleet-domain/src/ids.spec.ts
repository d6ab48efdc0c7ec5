import { NO_CONTROL_CHARACTERS_PATTERN, isPrintableText } from './ids';

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
