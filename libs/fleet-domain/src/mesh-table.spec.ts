import { vmRecord } from '../../../test/support/heartbeats';
import { meshRoutesFor, meshTable, routesAlike } from './mesh-table';
import { VmState } from './wire/vm-record';

const tcp = (host_port: number, guest_port = 80) => ({
  host_port,
  guest_port,
  protocol: 'tcp' as const,
});

describe('meshTable: the routing mesh from the live nodes', () => {
  const nodes = [
    {
      node_id: 'node-a',
      wg_ip: '10.8.0.21',
      vms: [
        vmRecord('vm-web', { host_ports: [tcp(40001, 22), tcp(8080)] }),
        vmRecord('vm-dns', {
          state: VmState.Stopped,
          host_ports: [tcp(40002, 22), { host_port: 5353, guest_port: 53, protocol: 'udp' }],
        }),
      ],
    },
    {
      node_id: 'node-b',
      wg_ip: '10.8.0.22',
      vms: [vmRecord('vm-db', { host_ports: [tcp(40003, 22), tcp(80)] })],
    },
  ];

  it("lists every published port (SSH, stopped VMs' and UDP too) with its VM, node and the node's address, by protocol then port", () => {
    expect(meshTable(nodes)).toEqual({
      routes: [
        {
          host_port: 8080,
          protocol: 'tcp',
          vm_id: 'vm-web',
          node_id: 'node-a',
          wg_ip: '10.8.0.21',
        },
        {
          host_port: 40001,
          protocol: 'tcp',
          vm_id: 'vm-web',
          node_id: 'node-a',
          wg_ip: '10.8.0.21',
        },
        {
          host_port: 40002,
          protocol: 'tcp',
          vm_id: 'vm-dns',
          node_id: 'node-a',
          wg_ip: '10.8.0.21',
        },
        {
          host_port: 40003,
          protocol: 'tcp',
          vm_id: 'vm-db',
          node_id: 'node-b',
          wg_ip: '10.8.0.22',
        },
        {
          host_port: 5353,
          protocol: 'udp',
          vm_id: 'vm-dns',
          node_id: 'node-a',
          wg_ip: '10.8.0.21',
        },
      ],
      duplicates: [],
      shared_addresses: [],
      crowded: [],
    });
  });

  it('leaves out a port below 1024 (an agent of the original services) and one two VMs publish, naming both', () => {
    const table = meshTable([
      ...nodes,
      {
        node_id: 'node-c',
        wg_ip: '10.8.0.23',
        vms: [vmRecord('vm-copy', { host_ports: [tcp(8080)] })],
      },
    ]);
    expect(table.routes.map((route) => route.host_port)).toEqual([40001, 40002, 40003, 5353]);
    expect(table.duplicates).toEqual([
      { port: '8080/tcp', holders: ['vm vm-copy on node node-c', 'vm vm-web on node node-a'] },
    ]);
  });

  it('keeps one route for a port a VM lists twice, not a duplicate of itself', () => {
    const twice = vmRecord('vm-web', { host_ports: [tcp(8080), tcp(8080)] });
    const table = meshTable([{ node_id: 'node-a', wg_ip: '10.8.0.21', vms: [twice, twice] }]);
    expect(table.routes).toEqual([
      { host_port: 8080, protocol: 'tcp', vm_id: 'vm-web', node_id: 'node-a', wg_ip: '10.8.0.21' },
    ]);
    expect(table.duplicates).toEqual([]);
  });

  it('names a few holders of a port many VMs publish and counts the rest (a bounded warning)', () => {
    const many = Array.from({ length: 10 }, (_, index) => ({
      node_id: `node-${index}`,
      wg_ip: `10.8.1.${index + 1}`,
      vms: [vmRecord(`vm-${index}`, { host_ports: [tcp(9000)] })],
    }));
    const table = meshTable(many);
    expect(table.routes).toEqual([]);
    expect(table.duplicates).toEqual([
      {
        port: '9000/tcp',
        holders: [
          'vm vm-0 on node node-0',
          'vm vm-1 on node node-1',
          'vm vm-2 on node node-2',
          'vm vm-3 on node node-3',
          '6 more',
        ],
      },
    ]);
  });

  it("tells each node the other nodes' routes only, at most so many (the lowest ports first)", () => {
    const table = meshTable(nodes);
    expect(meshRoutesFor(table, 'node-b').routes.map((route) => route.node_id)).toEqual([
      'node-a',
      'node-a',
      'node-a',
      'node-a',
    ]);
    expect(meshRoutesFor(table, 'node-a').routes.map((route) => route.vm_id)).toEqual(['vm-db']);
    expect(meshRoutesFor(table, 'node-b', 2)).toEqual({
      routes: table.routes.slice(0, 2),
      left_off: 2,
    });
  });

  it('leaves out the routes of nodes claiming one mesh address (in any spelling), a loopback one excepted', () => {
    const table = meshTable([
      ...nodes,
      {
        node_id: 'node-evil',
        wg_ip: '::ffff:10.8.0.22',
        vms: [vmRecord('vm-evil', { host_ports: [tcp(9999)] })],
      },
      {
        node_id: 'node-l1',
        wg_ip: '127.0.0.1',
        vms: [vmRecord('vm-l1', { host_ports: [tcp(7001)] })],
      },
      {
        node_id: 'node-l2',
        wg_ip: '127.0.0.1',
        vms: [vmRecord('vm-l2', { host_ports: [tcp(7002)] })],
      },
    ]);
    expect(table.routes.map((route) => `${route.host_port} ${route.node_id}`)).toEqual([
      '7001 node-l1',
      '7002 node-l2',
      '8080 node-a',
      '40001 node-a',
      '40002 node-a',
      '5353 node-a',
    ]);
    expect(table.shared_addresses).toEqual([
      { wg_ip: '10.8.0.22', node_ids: ['node-b', 'node-evil'] },
    ]);
  });

  it("keeps a node's lowest ports up to the cap and leaves the rest out, named", () => {
    const squatter = {
      node_id: 'node-s',
      wg_ip: '10.8.0.30',
      vms: [vmRecord('vm-s', { host_ports: [tcp(2000), tcp(1500), tcp(3000), tcp(1200)] })],
    };
    const table = meshTable([nodes[1], squatter], 2);
    expect(table.routes.map((route) => `${route.host_port} ${route.node_id}`)).toEqual([
      '1200 node-s',
      '1500 node-s',
      '40003 node-b',
    ]);
    expect(table.crowded).toEqual([{ node_id: 'node-s', left_off: 2 }]);
  });
});

describe("routesAlike: whether a node's new state leaves the mesh table as it was", () => {
  const node = (wg_ip: string, ...vms: ReturnType<typeof vmRecord>[]) => ({ wg_ip, vms });
  const web = (vmId: string, ...ports: number[]) =>
    vmRecord(vmId, { host_ports: ports.map((port) => tcp(port)) });

  it('is alike for the same address and VMs publishing the same ports, whatever else changed', () => {
    const before = node('10.8.0.21', web('vm-a', 8080), vmRecord('vm-b'));
    const after = node(
      '10.8.0.21',
      { ...web('vm-a', 8080), state: VmState.Stopped, ram_alloc_mb: 4096 },
      { ...vmRecord('vm-b'), host_ports: [] },
    );
    expect(routesAlike(before, after)).toBe(true);
  });

  it('differs for another address, a VM more, less or renamed, or a port changed in any way', () => {
    const before = node('10.8.0.21', web('vm-a', 8080, 8081));
    expect(routesAlike(before, node('10.8.0.22', web('vm-a', 8080, 8081)))).toBe(false);
    expect(routesAlike(before, node('10.8.0.21', web('vm-a', 8080, 8081), web('vm-b')))).toBe(
      false,
    );
    expect(routesAlike(before, node('10.8.0.21'))).toBe(false);
    expect(routesAlike(before, node('10.8.0.21', web('vm-c', 8080, 8081)))).toBe(false);
    expect(routesAlike(before, node('10.8.0.21', web('vm-a', 8080)))).toBe(false);
    expect(routesAlike(before, node('10.8.0.21', web('vm-a', 8080, 8082)))).toBe(false);
    const udp = vmRecord('vm-a', {
      host_ports: [tcp(8080), { host_port: 8081, guest_port: 80, protocol: 'udp' }],
    });
    expect(routesAlike(before, node('10.8.0.21', udp))).toBe(false);
  });
});
