import { Server, Socket, createServer } from 'node:net';

/** A command as a QMP client sends it. */
export interface QmpCommand {
  execute: string;
  arguments?: Record<string, unknown>;
}

/**
 * A QMP server on a unix socket, as QEMU speaks it: a greeting, then one JSON line per
 * command, with events in between. `answer` says what each command gets (undefined: nothing).
 * `commands` are the names received, `calls` the commands whole, in order.
 */
export async function qmpServer(
  path: string,
  answer: (command: QmpCommand, socket: Socket) => object | undefined,
): Promise<{ server: Server; commands: string[]; calls: QmpCommand[] }> {
  const commands: string[] = [];
  const calls: QmpCommand[] = [];
  const server = createServer((socket) => {
    socket.setEncoding('utf8');
    socket.write(JSON.stringify({ QMP: { version: {}, capabilities: [] } }) + '\n');
    let buffer = '';
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const command = JSON.parse(buffer.slice(0, newline)) as QmpCommand;
        buffer = buffer.slice(newline + 1);
        commands.push(command.execute);
        calls.push(command);
        const reply = answer(command, socket);
        if (reply) socket.write(JSON.stringify(reply) + '\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return { server, commands, calls };
}
