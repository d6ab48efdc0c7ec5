import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';

/** The page's terminal screen (assets/terminal.js), run as a browser would but without a page. */
interface Screen {
  setText(text: string): void;
  write(text: string): void;
  text(): string;
  cursor(): { row: number; col: number };
}

function newScreen(): Screen {
  const source = readFileSync(join(__dirname, 'assets', 'terminal.js'), 'utf8');
  const module = { exports: {} as { createScreen?: (changed: () => void) => Screen } };
  runInNewContext(source, { module });
  return module.exports.createScreen!(() => undefined);
}

describe("the console terminal's screen", () => {
  it('keeps the cursor within 1024 columns whatever the guest asks, quickly', () => {
    const screen = newScreen();
    const started = performance.now();
    screen.write('\x1b[999999999999C' + 'x');
    screen.write('\t'.repeat(1_000_000) + 'y');
    screen.write('\x1b[999999999999G' + 'z');
    expect(performance.now() - started).toBeLessThan(2_000);
    for (const line of screen.text().split('\n')) expect(line.length).toBeLessThanOrEqual(1024);
    expect(screen.cursor().col).toBeLessThanOrEqual(1024);
  });

  it('wraps a long line at 1024 columns, from the guest and from the log', () => {
    const screen = newScreen();
    screen.write('a'.repeat(3000));
    expect(
      screen
        .text()
        .split('\n')
        .map((line) => line.length),
    ).toEqual([1024, 1024, 952]);
    screen.setText('b'.repeat(2048) + '\nlogin: ');
    expect(screen.text().split('\n')).toEqual(['b'.repeat(1024), 'b'.repeat(1024), 'login: ']);
    screen.write('root\r\n');
    expect(screen.text().endsWith('login: root\n')).toBe(true);
  });
});
