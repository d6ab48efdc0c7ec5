import { vmHostConfig } from '../../../../../test/support/configs';
import { HostPortUnavailableError } from '../vms.errors';
import { HostPorts } from './host-ports';
import { MeshPorts } from './mesh-ports';
import type { PortProbe } from './port-probe';

const ELSEWHERE = {
  host_port: 8080,
  protocol: 'tcp' as const,
  vm_id: 'vm-web',
  node_id: 'node-b',
  wg_ip: '10.8.0.22',
};

/** A probe whose `busy` ports cannot be bound, picking free ports from `picks` in turn. */
function probe(busy: Set<string>, picks: number[]): PortProbe {
  return {
    isFree: (_host, port, protocol) => Promise.resolve(!busy.has(`${port}/${protocol}`)),
    anyFree: () => Promise.resolve(picks.shift() ?? 65000),
    pickRange: () => Promise.resolve('32768-60999'),
  };
}

describe('host ports with the routing mesh (MeshPorts)', () => {
  function setUp(busy: string[] = [], picks: number[] = []) {
    const mesh = new MeshPorts();
    const taken = new Set(busy);
    const released: string[] = [];
    mesh.releaseWith((port, protocol) => {
      released.push(`${port}/${protocol}`);
      taken.delete(`${port}/${protocol}`);
      return Promise.resolve(
        protocol === 'tcp' ? { address: '10.8.0.22', vmId: 'vm-web', nodeId: 'node-b' } : undefined,
      );
    });
    const ports = new HostPorts(
      vmHostConfig({ VM_NODE_ID: 'node-a', VM_WG_IP: '10.8.0.21' }),
      mesh,
    );
    ports.probe = probe(taken, picks);
    return { mesh, ports, released };
  }

  it("refuses a create's named port that a VM of another node publishes, naming that VM and node", async () => {
    const { mesh, ports } = setUp();
    mesh.learn([ELSEWHERE]);
    const refused = ports.assign([{ guest_port: 80, protocol: 'tcp', host_port: 8080 }], []);
    await expect(refused).rejects.toThrow(HostPortUnavailableError);
    await expect(refused).rejects.toThrow(
      'ports[0].host_port: 8080/tcp on node node-a (10.8.0.21) is published by vm vm-web on node node-b (the routing mesh); no VM was made',
    );
  });

  it('never picks a port published elsewhere, so each stays unique across the fleet', async () => {
    const { mesh, ports } = setUp([], [8080, 40001, 40002]);
    mesh.learn([ELSEWHERE]);
    const forwards = await ports.assign([{ guest_port: 80, protocol: 'tcp' }], []);
    expect(forwards.map(({ host_port }) => host_port)).toEqual([40001, 40002]);
  });

  it("keeps a moved VM's own port: the mesh's listener on it is let go first", async () => {
    // The mesh listens on 8080 here for vm-web while it runs on node-b: the port is bound.
    const { mesh, ports, released } = setUp(['8080/tcp'], [40001]);
    mesh.learn([ELSEWHERE]);
    const forwards = await ports.keep(
      [{ host_port: 8080, guest_port: 80, protocol: 'tcp' }],
      [],
      true,
      'vm-web',
    );
    expect(released).toEqual(['8080/tcp']);
    expect(forwards).toEqual([{ host_port: 8080, guest_port: 80, protocol: 'tcp' }]);
    // Where the mesh forwarded it: a VM moved in live reaches its old node by it meanwhile.
    expect(mesh.releasedFor(8080, 'tcp', 'vm-web')).toEqual({
      address: '10.8.0.22',
      vmId: 'vm-web',
      nodeId: 'node-b',
    });
    expect(mesh.releasedFor(8080, 'tcp', 'vm-other')).toBeUndefined();
    expect(mesh.releasedFor(8081, 'tcp', 'vm-web')).toBeUndefined();
  });

  it('does not keep a port another VM publishes elsewhere (a new one is picked), nor asks the mesh for it', async () => {
    const { mesh, ports, released } = setUp(['8080/tcp'], [40001]);
    mesh.learn([ELSEWHERE]);
    const forwards = await ports.keep(
      [{ host_port: 8080, guest_port: 80, protocol: 'tcp' }],
      [],
      true,
      'vm-other',
    );
    expect(released).toEqual([]);
    expect(forwards).toEqual([{ host_port: 40001, guest_port: 80, protocol: 'tcp' }]);
  });

  it('forgets the routes an answer no longer carries', async () => {
    const { mesh, ports } = setUp();
    mesh.learn([ELSEWHERE]);
    mesh.learn([]);
    const forwards = await ports.assign([{ guest_port: 80, protocol: 'tcp', host_port: 8080 }], []);
    expect(forwards[1].host_port).toBe(8080);
  });
});
