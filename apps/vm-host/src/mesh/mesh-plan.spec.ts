import type { MeshRoute } from '@app/fleet-domain';
import { MeshSelf, planMesh } from './mesh-plan';

const SELF: MeshSelf = {
  nodeId: 'node-a',
  wgIp: '10.8.0.21',
  hostAddresses: ['127.0.0.1', '10.8.0.21', '192.168.1.5', '::1', 'fe80::1'],
  ownPorts: new Set([40001]),
  keptPorts: new Set([9203, 9204, 9206, 9300]),
};

function route(overrides: Partial<MeshRoute> = {}): MeshRoute {
  return {
    host_port: 8080,
    protocol: 'tcp',
    vm_id: 'vm-web',
    node_id: 'node-b',
    wg_ip: '10.8.0.22',
    ...overrides,
  };
}

describe('planMesh: which routes this node follows', () => {
  it("listens on another node's published TCP port, forwarding to that node's address at the same port", () => {
    expect(planMesh([route()], SELF)).toEqual({
      listen: new Map([
        [8080, { address: '10.8.0.22', port: 8080, vm_id: 'vm-web', node_id: 'node-b' }],
      ]),
      refused: [],
    });
  });

  it("leaves UDP and this node's own VMs' ports alone, without a word", () => {
    const plan = planMesh([route({ protocol: 'udp' }), route({ host_port: 40001 })], SELF);
    expect(plan.listen.size).toBe(0);
    expect(plan.refused).toEqual([]);
  });

  it.each([
    [{ wg_ip: '127.0.0.1' }, '127.0.0.1 is loopback'],
    [{ wg_ip: '::ffff:127.0.0.5' }, '::ffff:127.0.0.5 is loopback'],
    [{ wg_ip: '169.254.169.254' }, '169.254.169.254 is not a unicast mesh address'],
    [{ wg_ip: '0.0.0.0' }, '0.0.0.0 is not a unicast mesh address'],
    [{ wg_ip: '224.0.0.1' }, '224.0.0.1 is not a unicast mesh address'],
    [{ wg_ip: 'example.com' }, 'example.com is not a unicast mesh address'],
    [{ wg_ip: '10.8.0.21' }, "10.8.0.21 is this node's own address"],
    [{ wg_ip: '192.168.1.5' }, '192.168.1.5 is an address of this host'],
    [{ wg_ip: '::ffff:192.168.1.5' }, '::ffff:192.168.1.5 is an address of this host'],
    [
      { wg_ip: '8.8.8.8' },
      '8.8.8.8 is not a private mesh address (10/8, 172.16/12, 192.168/16, 100.64/10, fd00::/8)',
    ],
    [
      { wg_ip: '172.32.0.1' },
      '172.32.0.1 is not a private mesh address (10/8, 172.16/12, 192.168/16, 100.64/10, fd00::/8)',
    ],
    [
      { wg_ip: '100.128.0.1' },
      '100.128.0.1 is not a private mesh address (10/8, 172.16/12, 192.168/16, 100.64/10, fd00::/8)',
    ],
    [
      { wg_ip: '2001:db8::1' },
      '2001:db8::1 is not a private mesh address (10/8, 172.16/12, 192.168/16, 100.64/10, fd00::/8)',
    ],
    [{ node_id: 'node-a' }, 'it names this node'],
    [{ host_port: 9204 }, "port 9204 is a fleet daemon's or reserved here"],
    [{ host_port: 9300 }, "port 9300 is a fleet daemon's or reserved here"],
    [{ host_port: 22 }, 'port 22 is not one from 1024 to 65535'],
    [{ host_port: 70000 }, 'port 70000 is not one from 1024 to 65535'],
    [{ vm_id: '../etc' }, 'a bad id'],
  ])('refuses a route with %j: %s', (overrides, why) => {
    const bad = route(overrides);
    const plan = planMesh([bad, route({ host_port: 8081 })], SELF);
    expect(plan.refused).toEqual([{ route: bad, why }]);
    expect([...plan.listen.keys()]).toEqual([8081]);
  });

  it.each(['10.201.3.4', '172.31.255.1', '192.168.0.9', '100.127.0.1', 'fd00:8::22'])(
    'follows a route to a private mesh address: %s',
    (wg_ip) => {
      expect(planMesh([route({ wg_ip })], SELF).listen.get(8080)?.address).toBe(wg_ip);
    },
  );

  it("refuses this host's own interface address even when this node is on loopback", () => {
    const plan = planMesh([route({ wg_ip: '127.0.0.1' })], { ...SELF, wgIp: '127.0.0.2' });
    expect(plan.refused.map(({ why }) => why)).toEqual(['127.0.0.1 is an address of this host']);
  });

  it('takes loopback targets when this node is on loopback itself (a fleet on one machine)', () => {
    const plan = planMesh([route({ wg_ip: '127.0.0.3' })], { ...SELF, wgIp: '127.0.0.2' });
    expect(plan.listen.get(8080)?.address).toBe('127.0.0.3');
  });

  it('follows the first of two routes for one port and refuses the second', () => {
    const second = route({ node_id: 'node-c', wg_ip: '10.8.0.23' });
    const plan = planMesh([route(), second], SELF);
    expect(plan.listen.get(8080)?.node_id).toBe('node-b');
    expect(plan.refused).toEqual([{ route: second, why: 'its port is listed twice' }]);
  });
});
