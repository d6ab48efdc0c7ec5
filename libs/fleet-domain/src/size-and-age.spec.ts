import { ageText, sizeText } from './size-and-age';

const NOW = Date.parse('2026-08-06T12:00:00Z');

describe('sizeText and ageText (the console and the CLI alike)', () => {
  it('words sizes in the largest unit with one decimal, and ages roughly', () => {
    expect(sizeText(512)).toBe('512 B');
    expect(sizeText(1_503_238_553)).toBe('1.4 GiB');
    expect(ageText('2026-08-06T11:59:18Z', NOW)).toBe('42 s');
    expect(ageText('2026-08-06T11:00:00Z', NOW)).toBe('60 min');
    expect(ageText('2026-08-04T12:00:00+00:00', NOW)).toBe('2 d');
    expect(ageText('soon', NOW)).toBe('?');
  });
});
