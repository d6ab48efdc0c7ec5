import { runTool } from './run-tool';

describe('runTool', () => {
  it('resolves once the tool exits 0, with what it printed on stdout', async () => {
    await expect(runTool(process.execPath, ['-e', 'process.exit(0)'])).resolves.toBe('');
    await expect(
      runTool(process.execPath, ['-e', 'process.stdout.write(JSON.stringify({ a: 1 }))']),
    ).resolves.toBe('{"a":1}');
  });

  it('names the tool and the last three lines of its stderr when it fails', async () => {
    const failing =
      "['one', 'two', 'three', 'four'].forEach((line) => console.error(line)); process.exit(3)";
    await expect(runTool(process.execPath, ['-e', failing])).rejects.toThrow(
      `${process.execPath} failed: two three four`,
    );
  });

  it('says why a tool that cannot run did not', async () => {
    await expect(runTool('no-such-tool-on-this-host', ['--version'])).rejects.toThrow(
      /^no-such-tool-on-this-host failed: .*ENOENT/,
    );
  });

  it('stops a tool that runs past its time', async () => {
    await expect(
      runTool(process.execPath, ['-e', 'setTimeout(() => {}, 10_000)'], 200),
    ).rejects.toThrow(`${process.execPath} failed: `);
  });
});
