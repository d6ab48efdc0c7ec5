import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { acceptUpgrade, refuseUpgrade } from '@app/daemon';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { runInteractiveConsole } from './vm-terminal';

describe('vm console --interactive', () => {
  let server: Server;
  let endpoint: string;
  let upgrades: IncomingMessage[];

  beforeEach(async () => {
    upgrades = [];
    server = createServer((_req, res) => res.end());
    server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
      upgrades.push(req);
      if (req.url === '/v1/vms/vm-busy/terminal') {
        return refuseUpgrade(
          socket,
          409,
          'vm vm-busy: its serial console is in use by another session',
        );
      }
      const ws = acceptUpgrade(req, socket, head);
      // A guest that echoes, with a title change in the middle of its answer.
      ws.onMessage((data) => ws.send(Buffer.from(`\x1b]0;owned\x07${data.toString()}`)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function terminal(): {
    stdin: PassThrough & { isTTY?: boolean };
    stdout: PassThrough;
    output: () => string;
    stderr: { text: string; onWrite: () => void; write(text: string): void };
  } {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    let output = '';
    stdout.on('data', (chunk: Buffer) => (output += chunk.toString('latin1')));
    const stderr = {
      text: '',
      onWrite: (): void => undefined,
      write(text: string) {
        this.text += text;
        this.onWrite();
      },
    };
    return { stdin, stdout, output: () => output, stderr };
  }

  it('sends the keys with the API token, shows the guest without its string sequences, and leaves on Ctrl-]', async () => {
    const io = terminal();
    const running = runInteractiveConsole({
      vmId: 'vm-1',
      opsEndpoint: endpoint,
      apiToken: 'api-token-0123456789',
      stdin: io.stdin as unknown as NodeJS.ReadStream,
      stdout: io.stdout,
      stderr: io.stderr,
    });
    await new Promise<void>((resolve) => (io.stderr.onWrite = resolve));
    io.stdin.write('root');
    await new Promise<void>((resolve) => io.stdout.once('data', () => resolve()));
    io.stdin.write('\x1d');
    await running;
    expect(io.output()).toBe('root');
    expect(io.stderr.text).toContain('--- vm vm-1: left its serial console ---');
    expect(upgrades[0].url).toBe('/v1/vms/vm-1/terminal');
    expect(upgrades[0].headers.authorization).toBe('Bearer api-token-0123456789');
  });

  it("prints the listener's refusal (exit 1) and, refused a connection, where to give its address (exit 3)", async () => {
    const io = terminal();
    const base = {
      stdin: io.stdin as unknown as NodeJS.ReadStream,
      stdout: io.stdout,
      stderr: io.stderr,
    };
    await expect(
      runInteractiveConsole({ ...base, vmId: 'vm-busy', opsEndpoint: endpoint }),
    ).rejects.toMatchObject({
      exitCode: ExitCode.Refused,
      message: 'vm vm-busy: its serial console is in use by another session',
    });
    const port = (server.address() as AddressInfo).port;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const down = runInteractiveConsole({
      ...base,
      vmId: 'vm-1',
      opsEndpoint: `http://127.0.0.1:${port}`,
    });
    await expect(down).rejects.toBeInstanceOf(CliFailure);
    await expect(down).rejects.toMatchObject({
      exitCode: ExitCode.Unreachable,
      message: expect.stringContaining('--ops-endpoint or VM_FLEET_OPS_ENDPOINT'),
    });
  });
});
