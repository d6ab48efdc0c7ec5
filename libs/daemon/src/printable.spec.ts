import { escapeControlCharacters, excerpt } from './printable';

describe('printable text', () => {
  it('escapes control and format characters for a log line, astral ones by code point', () => {
    expect(escapeControlCharacters('a\nb\u0007c\u202Ed\u200Be\u{E0041}f')).toBe(
      'a\\nb\\u0007c\\u202ed\\u200be\\u{e0041}f',
    );
  });

  it('turns control and format characters into spaces and cuts to the length given', () => {
    expect(excerpt('evil\u202Egnp.exe\u2066', 100)).toBe('evil gnp.exe ');
    expect(excerpt('x'.repeat(10), 5)).toBe('xxxx…');
  });

  it('leaves other text, accents and emoji included, as it is', () => {
    expect(excerpt('café 🚀 node-1', 100)).toBe('café 🚀 node-1');
  });
});
