import { Logger } from '@nestjs/common';
import { type AddressInfo, type Server, connect, createServer } from 'node:net';
import type { MeshRoute } from '@app/fleet-domain';
import { vmHostConfig } from '../../../../test/support/configs';
import { FakeClock } from '../../../../test/support/fake-clock';
import type { HostMetrics } from '../metrics/host-metrics.service';
import type { VmSidecars } from '../vms/files/vm-sidecars';
import { MeshPorts } from '../vms/ports/mesh-ports';
import { MeshBudget } from './mesh-listener';
import { RoutingMesh } from './routing-mesh';

/**
 * The mesh with real sockets on loopback: this node at 127.0.0.1, the VMs' nodes at 127.0.0.2
 * and 127.0.0.3 (a fleet on one machine, as the system tests run it).
 */
const SELF = '127.0.0.1';

/** A "VM" on another node: answers each connection with `<name>:` and what it read, then ends. */
async function service(address: string, name: string, port = 0): Promise<Server> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => socket.end(`${name}:${Buffer.concat(chunks).toString()}`));
  });
  await new Promise<void>((resolve) => server.listen({ host: address, port }, resolve));
  return server;
}

const portOf = (server: Server) => (server.address() as AddressInfo).port;

/** Whether `port` can be bound at `address` now. */
function freeAt(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host: address, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}
const closed = (server: Server) => new Promise((resolve) => server.close(resolve));

/** Sends `text` to address:port, half-closes, and resolves what came back (rejects on refusal). */
function exchange(address: string, port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, allowHalfOpen: true }, () => socket.end(text));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('error', reject);
  });
}

/** `attempt` until it resolves `expected` (the other end lets go of a connection soon after). */
async function eventually(attempt: () => Promise<string>, expected: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    const got = await attempt().catch((error: Error) => error.message);
    if (got === expected || tries >= 50) return void expect(got).toBe(expected);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function route(port: number, overrides: Partial<MeshRoute> = {}): MeshRoute {
  return {
    host_port: port,
    protocol: 'tcp',
    vm_id: 'vm-web',
    node_id: 'node-b',
    wg_ip: '127.0.0.2',
    ...overrides,
  };
}

describe('RoutingMesh: listeners opened and closed as the table changes, bytes forwarded', () => {
  let servers: Server[] = [];
  let mesh: RoutingMesh;
  let ports: MeshPorts;
  let clock: FakeClock;
  let warnings: string[];
  /** ppn_vm_host_mesh_ports as set: [listening, failed]. */
  let observed: Array<[number, number]>;

  function start(env: Record<string, string> = {}): RoutingMesh {
    clock = new FakeClock();
    ports = new MeshPorts();
    observed = [];
    const metrics = {
      observeMeshPorts: (listening: number, failed: number) => observed.push([listening, failed]),
    } as unknown as HostMetrics;
    mesh = new RoutingMesh(
      vmHostConfig({ VM_NODE_ID: 'node-a', VM_WG_IP: SELF, ...env }),
      ports,
      clock,
      undefined,
      metrics,
    );
    return mesh;
  }

  /** A service on node-b at a port free on this node's address too (other tests run beside). */
  async function onNodeB(name = 'b'): Promise<number> {
    for (;;) {
      const server = await service('127.0.0.2', name);
      if (await freeAt(SELF, portOf(server))) {
        servers.push(server);
        return portOf(server);
      }
      await closed(server);
    }
  }

  beforeEach(() => {
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    await mesh?.onApplicationShutdown();
    await Promise.all(servers.map(closed));
    servers = [];
    jest.restoreAllMocks();
  });

  it("reaches another node's VM at this node's address and the same port, both ways, half-close passed on", async () => {
    const port = await onNodeB();
    await start().learn([route(port)], []);
    expect([...mesh.listening().keys()]).toEqual([port]);
    expect(await exchange(SELF, port, 'hello')).toBe('b:hello');
    expect(await exchange(SELF, port, 'x'.repeat(300_000))).toBe(`b:${'x'.repeat(300_000)}`);
  });

  it('closes a port the table no longer carries (an answer without mesh_routes: none), and follows a VM that moved to a third node', async () => {
    const port = await onNodeB();
    const other = await service('127.0.0.3', 'c', port);
    servers.push(other);
    await start().learn([route(port)], []);
    await mesh.learn([route(port, { node_id: 'node-c', wg_ip: '127.0.0.3' })], []);
    expect(await exchange(SELF, port, 'moved')).toBe('c:moved');
    await mesh.learn([], []);
    expect(mesh.listening().size).toBe(0);
    await expect(exchange(SELF, port, 'gone')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('never listens on a port of its own VMs, nor with VM_ROUTING_MESH=0 (the table still keeps ports unique)', async () => {
    const port = await onNodeB();
    await start().learn(
      [route(port)],
      [{ host_ports: [{ host_port: port, guest_port: 80, protocol: 'tcp' }] }],
    );
    expect(mesh.listening().size).toBe(0);
    await mesh.onApplicationShutdown();
    await start({ VM_ROUTING_MESH: '0' }).learn([route(port)], []);
    expect(mesh.listening().size).toBe(0);
    expect(ports.publishedElsewhere(port, 'tcp')).toBe('vm vm-web on node node-b');
  });

  it("never listens on a port a VM's files here hold (a VM moved in, Provisioning, lists none yet)", async () => {
    const port = await onNodeB();
    const files = {
      all: () =>
        Promise.resolve([{ forwards: [{ host_port: port, guest_port: 22, protocol: 'tcp' }] }]),
    } as unknown as VmSidecars;
    start();
    mesh = new RoutingMesh(
      vmHostConfig({ VM_NODE_ID: 'node-a', VM_WG_IP: SELF }),
      ports,
      clock,
      files,
    );
    await mesh.learn([route(port)], [{ host_ports: [] }]);
    expect(mesh.listening().size).toBe(0);
  });

  it('logs a port another process holds, naming node and port, opens the others, and takes it once free', async () => {
    const held = await service(SELF, 'squatter');
    const port = portOf(held);
    await service('127.0.0.2', 'b', port).then((server) => servers.push(server));
    const free = await onNodeB();
    await start().learn([route(port), route(free, { vm_id: 'vm-db' })], []);
    expect([...mesh.listening().keys()]).toEqual([free]);
    expect(warnings).toEqual([
      `node node-a: routing mesh cannot listen on ${SELF}:${port}/tcp for vm vm-web on node node-b (another process holds it; list it in VM_RESERVED_HOST_PORTS to keep the fleet off it); that service is not reached through this node, tried again at each heartbeat`,
    ]);
    await mesh.learn([route(port), route(free, { vm_id: 'vm-db' })], []);
    expect(warnings).toHaveLength(1);
    expect(observed.at(-1)).toEqual([1, 1]);
    await closed(held);
    await mesh.learn([route(port), route(free, { vm_id: 'vm-db' })], []);
    expect(await exchange(SELF, port, 'now')).toBe('b:now');
    expect(observed.at(-1)).toEqual([2, 0]);
  });

  it("lets a port go to a VM moved here, and leaves it until the VM's heartbeat lists it or 2 minutes pass", async () => {
    const port = await onNodeB();
    await start().learn([route(port)], []);
    await ports.take(port, 'tcp');
    expect(mesh.listening().size).toBe(0);
    // Where it forwarded the port, for a VM moving in live (MovePortBridge) meanwhile.
    expect(ports.releasedFor(port, 'tcp', 'vm-web')).toEqual({
      address: '127.0.0.2',
      vmId: 'vm-web',
      nodeId: 'node-b',
    });
    const qemu = await service(SELF, 'here', port);
    await closed(qemu);
    await mesh.learn([route(port)], []);
    expect(mesh.listening().size).toBe(0);
    clock.advance(120_000);
    await mesh.learn([route(port)], []);
    expect([...mesh.listening().keys()]).toEqual([port]);
  });

  it('forwards a VM moved out live to its new node at once, while it is still listed here, until the table lists it or 2 minutes pass', async () => {
    const port = await onNodeB();
    const own = [
      {
        vm_id: 'vm-web',
        host_ports: [{ host_port: port, guest_port: 80, protocol: 'tcp' as const }],
      },
    ];
    await start().learn([], own);
    expect(mesh.listening().size).toBe(0);
    // Its QEMU here stopped, the controller's table not knowing yet: this node's address works.
    await ports.movedOut('vm-web', own[0].host_ports, { nodeId: 'node-b', wgIp: '127.0.0.2' });
    expect(mesh.listening().get(port)).toEqual({
      address: '127.0.0.2',
      port,
      vm_id: 'vm-web',
      node_id: 'node-b',
    });
    expect(await exchange(SELF, port, 'moved')).toBe('b:moved');
    // The next answer, still without it (its disk here not released yet): kept.
    await mesh.learn([], own);
    expect(await exchange(SELF, port, 'still')).toBe('b:still');
    // The table lists it: its own route serves (here to a third node).
    const third = await service('127.0.0.3', 'c', port);
    servers.push(third);
    await mesh.learn([route(port, { node_id: 'node-c', wg_ip: '127.0.0.3' })], own);
    expect(await exchange(SELF, port, 'table')).toBe('c:table');
    // Its disk here not released after 2 minutes: its port this node's again.
    clock.advance(120_000);
    await mesh.learn([], own);
    expect(mesh.listening().size).toBe(0);
    // Moved back here before then: the hand-off ends with the move in.
    await ports.movedOut('vm-web', own[0].host_ports, { nodeId: 'node-b', wgIp: '127.0.0.2' });
    expect(mesh.listening().size).toBe(1);
    await ports.take(port, 'tcp');
    expect(mesh.listening().size).toBe(0);
    await mesh.learn([], own);
    expect(mesh.listening().size).toBe(0);
  });

  it("judges a moved-out VM's new node like any route: never an address of this host", async () => {
    const port = await onNodeB();
    await start().learn([], []);
    await ports.movedOut('vm-web', [{ host_port: port, guest_port: 80, protocol: 'tcp' }], {
      nodeId: 'node-b',
      wgIp: SELF,
    });
    expect(mesh.listening().size).toBe(0);
    expect(warnings.join('\n')).toContain(`port ${port} of vm vm-web on node node-b (${SELF})`);
  });

  it('bounds the connections of every port together', async () => {
    const [one, two] = [await onNodeB(), await onNodeB()];
    start().budget = new MeshBudget(1);
    await mesh.learn([route(one), route(two, { vm_id: 'vm-db' })], []);
    const held = connect({ host: SELF, port: one });
    held.on('error', () => undefined);
    await new Promise((resolve) => held.once('connect', resolve));
    await expect(exchange(SELF, two, 'refused')).resolves.toBe('');
    held.destroy();
    await eventually(() => exchange(SELF, two, 'again'), 'b:again');
  });

  it('bounds the connections of one client address, every port together', async () => {
    const [one, two] = [await onNodeB(), await onNodeB()];
    start().budget = new MeshBudget(10, 1);
    await mesh.learn([route(one), route(two, { vm_id: 'vm-db' })], []);
    const held = connect({ host: SELF, port: one, localAddress: '127.0.0.5' });
    held.on('error', () => undefined);
    await new Promise((resolve) => held.once('connect', resolve));
    const from = (localAddress: string, text: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: SELF, port: two, localAddress, allowHalfOpen: true }, () =>
          socket.end(text),
        );
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString()));
        socket.on('error', reject);
      });
    // Accepted then closed: no byte back (a reset if the kernel still held what was sent).
    await expect(from('127.0.0.5', 'refused').catch(() => '')).resolves.toBe('');
    await eventually(() => from('127.0.0.6', 'other'), 'b:other');
    held.destroy();
    await eventually(() => from('127.0.0.5', 'again'), 'b:again');
  });

  it('bounds the connections of a port and ends one idle for too long', async () => {
    const port = await onNodeB();
    start().limits = { connectTimeoutMs: 5_000, idleTimeoutMs: 300, maxConnections: 1 };
    await mesh.learn([route(port)], []);
    const first = connect({ host: SELF, port });
    await new Promise((resolve) => first.once('connect', resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const second = connect({ host: SELF, port });
    const secondClosed = new Promise((resolve) => second.once('close', resolve));
    second.on('error', () => undefined);
    await secondClosed;
    // The first, sending nothing, is ended by the idle timeout.
    const firstEnded = new Promise((resolve) => first.once('close', resolve));
    first.on('error', () => undefined);
    await firstEnded;
  });
});
