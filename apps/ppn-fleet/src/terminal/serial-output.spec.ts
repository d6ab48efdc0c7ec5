import { SerialOutputFilter } from './serial-output';

describe('SerialOutputFilter', () => {
  const run = (...chunks: string[]): string => {
    const filter = new SerialOutputFilter();
    return chunks
      .map((chunk) => filter.filter(Buffer.from(chunk, 'latin1')).toString('latin1'))
      .join('');
  };

  it('keeps text, control characters and CSI sequences (colours, the cursor)', () => {
    expect(run('login: \x1b[1;32mok\x1b[0m\r\n\x08 \x08')).toBe(
      'login: \x1b[1;32mok\x1b[0m\r\n\x08 \x08',
    );
  });

  it('drops a title, a clipboard write or a DCS whole, even split across reads', () => {
    expect(run('a\x1b]0;owned\x07b')).toBe('ab');
    expect(run('a\x1b]52;c;cm0gLXJmIC8=\x1b\\b')).toBe('ab');
    expect(run('a\x1b', ']52;c;', 'eA==\x1b', '\\b')).toBe('ab');
    expect(run('a\x1bP+q544e\x1b\\b')).toBe('ab');
  });
});
