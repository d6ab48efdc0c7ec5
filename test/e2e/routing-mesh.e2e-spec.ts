import { Logger } from '@nestjs/common';
import { type AddressInfo, type Server, connect, createServer } from 'node:net';
import request from 'supertest';
import type { HeartbeatAnswer, VmRecord } from '@app/fleet-domain';
import { FleetClient } from '../../apps/vm-host/src/heartbeat/fleet.client';
import { RoutingMesh } from '../../apps/vm-host/src/mesh/routing-mesh';
import { MeshPorts } from '../../apps/vm-host/src/vms/ports/mesh-ports';
import { vmHostConfig } from '../support/configs';
import { FakeClock } from '../support/fake-clock';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';

/**
 * The routing mesh through the controller: heartbeat answers carry the table of the other live
 * nodes' published ports (checked against openapi/fleet.openapi.json), and an agent's mesh fed
 * by the answers its FleetClient reads forwards a connection to its own address to the node
 * that runs the VM; after the VM moved to a third node, the same address and port reach it
 * there. Nodes on loopback addresses of this machine (127.0.0.2-4), the VM's published port a
 * plain listener at its node's address, as QEMU's forward would be.
 */

const VM = 'vm-00000000000000e1';

/** Answers each connection with `<name>:` and what it read, once the client half-closes. */
async function service(address: string, name: string, port: number): Promise<Server> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => socket.end(`${name}:${Buffer.concat(chunks).toString()}`));
  });
  await new Promise<void>((resolve) => server.listen({ host: address, port }, resolve));
  return server;
}

/** Whether `port` can be bound at `address` now. */
function freeAt(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host: address, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

function exchange(address: string, port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, allowHalfOpen: true }, () => socket.end(text));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString()));
    socket.on('error', reject);
  });
}

describe('the routing mesh: heartbeat answers carry the table, an agent forwards from it', () => {
  let fleet: RunningFleet;
  const servers: Server[] = [];
  let mesh: RoutingMesh | undefined;

  beforeEach(async () => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    fleet = await startFleet();
  });

  afterEach(async () => {
    await mesh?.onApplicationShutdown();
    await Promise.all(
      servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
    );
    await fleet.close();
    jest.restoreAllMocks();
  });

  const ports = (web: number) => [
    { host_port: 40122, guest_port: 22, protocol: 'tcp' as const },
    { host_port: web, guest_port: 80, protocol: 'tcp' as const },
    { host_port: 5353, guest_port: 53, protocol: 'udp' as const },
  ];

  async function beat(nodeId: string, wgIp: string, vms: VmRecord[]): Promise<HeartbeatAnswer> {
    // The table is read from the store once a second at most.
    fleet.clock.advance(1_100);
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: nodeId, wg_ip: wgIp, vms }))
      .expect(200);
    return body as HeartbeatAnswer;
  }

  it("tells each node the other nodes' published ports, with the node's address, and a fleet that publishes nothing gets {accepted: true}", async () => {
    expect(await beat('node-b', '127.0.0.3', [])).toEqual({ accepted: true });
    await beat('node-a', '127.0.0.2', [vmRecord(VM, { host_ports: ports(48080) })]);
    const route = { vm_id: VM, node_id: 'node-a', wg_ip: '127.0.0.2' };
    expect(await beat('node-b', '127.0.0.3', [])).toEqual({
      accepted: true,
      mesh_routes: [
        { host_port: 40122, protocol: 'tcp', ...route },
        { host_port: 48080, protocol: 'tcp', ...route },
        { host_port: 5353, protocol: 'udp', ...route },
      ],
    });
    // Its own VM's ports are not its table.
    expect(await beat('node-a', '127.0.0.2', [vmRecord(VM, { host_ports: ports(48080) })])).toEqual(
      {
        accepted: true,
      },
    );
  });

  it('forwards a connection to another node through the FleetClient-read table, and reaches the VM at the same address after it moved', async () => {
    // A port free on every address: the VM's published port.
    let onA: Server;
    let webPort: number;
    for (;;) {
      onA = await service('127.0.0.2', 'a', 0);
      webPort = (onA.address() as AddressInfo).port;
      if ((await freeAt('127.0.0.3', webPort)) && (await freeAt('127.0.0.4', webPort))) break;
      await new Promise((resolve) => onA.close(resolve));
    }
    servers.push(onA);
    await beat('node-a', '127.0.0.2', [vmRecord(VM, { host_ports: ports(webPort) })]);

    const nodeB = vmHostConfig({ VM_NODE_ID: 'node-b', VM_WG_IP: '127.0.0.3' });
    mesh = new RoutingMesh(nodeB, new MeshPorts(), new FakeClock());
    const client = new FleetClient(fleet.url);
    const beatB = async () => {
      fleet.clock.advance(1_100);
      const answer = await client.sendHeartbeat(
        heartbeat({ node_id: 'node-b', wg_ip: '127.0.0.3', vms: [] }),
        AbortSignal.timeout(5_000),
      );
      await mesh?.learn(answer.mesh_routes ?? [], []);
    };
    await beatB();
    expect(await exchange('127.0.0.3', webPort, 'office')).toBe('a:office');

    // The VM now runs on node-c (node-a lists it no more, node-c does): node-b follows.
    const onC = await service('127.0.0.4', 'c', webPort);
    servers.push(onC);
    await beat('node-a', '127.0.0.2', []);
    await beat('node-c', '127.0.0.4', [vmRecord(VM, { host_ports: ports(webPort) })]);
    await beatB();
    expect(await exchange('127.0.0.3', webPort, 'office')).toBe('c:office');

    // Deleted: node-b's answer carries no table, and its mesh closes the port.
    await beat('node-c', '127.0.0.4', []);
    await beatB();
    expect(mesh.listening().size).toBe(0);
  });
});
