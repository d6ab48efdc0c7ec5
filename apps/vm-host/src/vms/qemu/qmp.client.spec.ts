import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { qmpServer } from '../../../../../test/support/fake-qmp-server';
import { withQmp } from './qmp.client';

describe('withQmp', () => {
  let root: string;
  let socketPath: string;
  let server: Server | undefined;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qmp-'));
    socketPath = join(root, 'qmp.sock');
  });

  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    await rm(root, { recursive: true, force: true });
  });

  it('negotiates capabilities, then answers commands in order, skipping events', async () => {
    const qmp = await qmpServer(socketPath, (command, socket) => {
      if (command.execute === 'query-status') {
        socket.write(JSON.stringify({ event: 'RESUME', timestamp: {} }) + '\n');
        return { return: { status: 'running', running: true } };
      }
      return { return: {} };
    });
    server = qmp.server;
    const status = await withQmp(socketPath, 1_000, (session) => session.execute('query-status'));
    expect(status).toEqual({ status: 'running', running: true });
    expect(qmp.commands).toEqual(['qmp_capabilities', 'query-status']);
  });

  it("fails a command with QEMU's own description of the error", async () => {
    ({ server } = await qmpServer(socketPath, (command) =>
      command.execute === 'qmp_capabilities'
        ? { return: {} }
        : { error: { class: 'CommandNotFound', desc: 'The command nope has not been found' } },
    ));
    await expect(withQmp(socketPath, 1_000, (session) => session.execute('nope'))).rejects.toThrow(
      'QMP nope: The command nope has not been found',
    );
  });

  it('gives up on a QEMU that stays silent', async () => {
    ({ server } = await qmpServer(socketPath, () => undefined));
    await expect(
      withQmp(socketPath, 200, (session) => session.execute('query-status')),
    ).rejects.toThrow('QMP silent for 200 ms');
  });

  it('fails at once when no QEMU listens on the socket', async () => {
    await expect(withQmp(socketPath, 1_000, () => Promise.resolve())).rejects.toThrow(/ENOENT/);
  });
});
