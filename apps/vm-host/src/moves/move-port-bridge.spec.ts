import { Logger } from '@nestjs/common';
import { type AddressInfo, type Server, connect, createServer } from 'node:net';
import type { HostPort } from '@app/fleet-domain';
import { MeshPorts } from '../vms/ports/mesh-ports';
import type { QmpSession } from '../vms/qemu/qmp.client';
import { MovePortBridge } from './move-port-bridge';

/** This node at 127.0.0.1, the VM's old node at 127.0.0.2 (a fleet on one machine). */
const SELF = '127.0.0.1';
const OLD_NODE = '127.0.0.2';
const NODE = { nodeId: 'node-b', wgIp: SELF, routingMesh: true };

/** The VM on its old node: answers each connection with `old:` and what it read. */
async function oldNodeService(): Promise<Server> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => socket.end(`old:${Buffer.concat(chunks).toString()}`));
  });
  await new Promise<void>((resolve) => server.listen({ host: OLD_NODE, port: 0 }, resolve));
  return server;
}

function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: SELF, port, allowHalfOpen: true }, () => socket.end(text));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('error', reject);
  });
}

/** A QMP session recording each HMP command line, answering `answers[line]` (else silent). */
function fakeQmp(answers: Record<string, string> = {}) {
  const lines: string[] = [];
  const qmp = {
    execute: (command: string, args?: Record<string, unknown>) => {
      expect(command).toBe('human-monitor-command');
      const line = String(args?.['command-line']);
      lines.push(line);
      return Promise.resolve(answers[line] ?? '');
    },
  } as unknown as QmpSession;
  return { qmp, lines };
}

/** MeshPorts as the routing mesh leaves it once it let `port` go for `vmId` (was to the old node). */
async function releasedTo(vmId: string, port: number): Promise<MeshPorts> {
  const mesh = new MeshPorts();
  mesh.releaseWith(() => Promise.resolve({ address: OLD_NODE, vmId, nodeId: 'node-a' }));
  await mesh.take(port, 'tcp');
  return mesh;
}

describe('MovePortBridge: a VM moving in live keeps its TCP ports served at this node', () => {
  let server: Server;
  let logger: Logger;
  let errors: string[];

  beforeEach(async () => {
    server = await oldNodeService();
    logger = new Logger('test');
    errors = [];
    jest.spyOn(logger, 'log').mockImplementation(() => undefined);
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    jest.spyOn(logger, 'error').mockImplementation((message: unknown) => {
      errors.push(String(message));
    });
  });

  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('forwards a port the mesh forwarded to the old node until the guest runs here, then gives each TCP port to QEMU', async () => {
    const port = (server.address() as AddressInfo).port;
    const forwards: HostPort[] = [
      { host_port: port, guest_port: 80, protocol: 'tcp' },
      { host_port: 5353, guest_port: 53, protocol: 'udp' },
    ];
    const bridge = await MovePortBridge.open(
      NODE,
      await releasedTo('vm-1', port),
      'vm-1',
      forwards,
      logger,
    );
    expect(bridge.bridged).toEqual([port]);
    expect(await exchange(port, 'hello')).toBe('old:hello');

    const { qmp, lines } = fakeQmp();
    expect(await bridge.handOver(qmp)).toEqual([]);
    // UDP stayed on QEMU's command line; TCP is added now, at this node's address only.
    expect(lines).toEqual([`hostfwd_add net0 tcp:${SELF}:${port}-:80`]);
    expect(bridge.bridged).toEqual([]);
    await expect(exchange(port, 'again')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('forwards nothing for a port the mesh forwarded to another VM, or with the mesh off, yet still hands every TCP port over', async () => {
    const port = (server.address() as AddressInfo).port;
    const forwards: HostPort[] = [{ host_port: port, guest_port: 22, protocol: 'tcp' }];
    const elsewhere = await MovePortBridge.open(
      NODE,
      await releasedTo('vm-other', port),
      'vm-1',
      forwards,
      logger,
    );
    expect(elsewhere.bridged).toEqual([]);
    const off = await MovePortBridge.open(
      { ...NODE, routingMesh: false },
      await releasedTo('vm-1', port),
      'vm-1',
      forwards,
      logger,
    );
    expect(off.bridged).toEqual([]);
    const { qmp, lines } = fakeQmp();
    await off.handOver(qmp);
    expect(lines).toEqual([`hostfwd_add net0 tcp:${SELF}:${port}-:22`]);
  });

  it('logs a port QEMU cannot take, naming it, and goes on with the others; a roll-back closes the forwarding', async () => {
    const port = (server.address() as AddressInfo).port;
    const forwards: HostPort[] = [
      { host_port: 40022, guest_port: 22, protocol: 'tcp' },
      { host_port: port, guest_port: 80, protocol: 'tcp' },
    ];
    const bridge = await MovePortBridge.open(
      NODE,
      await releasedTo('vm-1', port),
      'vm-1',
      forwards,
      logger,
    );
    const refused = `hostfwd_add net0 tcp:${SELF}:40022-:22`;
    const { qmp, lines } = fakeQmp({ [refused]: 'Could not set up host forwarding rule' });
    expect(await bridge.handOver(qmp)).toEqual([40022]);
    expect(lines).toHaveLength(2);
    expect(errors).toEqual([expect.stringContaining(`could not take ${SELF}:40022/tcp`)]);

    const rolledBack = await MovePortBridge.open(
      NODE,
      await releasedTo('vm-1', port),
      'vm-1',
      forwards,
      logger,
    );
    expect(rolledBack.bridged).toEqual([port]);
    await rolledBack.close();
    await expect(exchange(port, 'x')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});
