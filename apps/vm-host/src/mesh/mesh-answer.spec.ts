import { MAX_MESH_ROUTES } from '@app/fleet-domain';
import { meshRoutesOf } from './mesh-answer';

const good = {
  host_port: 8080,
  protocol: 'tcp',
  vm_id: 'vm-web',
  node_id: 'node-b',
  wg_ip: '10.8.0.22',
};

describe("meshRoutesOf: the answer's table, read only in its shape", () => {
  it('keeps routes of the right shape and drops the others, each field checked', () => {
    expect(
      meshRoutesOf([
        good,
        { ...good, host_port: '8080' },
        { ...good, host_port: 80.5 },
        { ...good, protocol: 'sctp' },
        { ...good, vm_id: '../x' },
        { ...good, node_id: 7 },
        { ...good, wg_ip: 'x'.repeat(46) },
        null,
        'route',
      ]),
    ).toEqual([good]);
  });

  it('reads none from anything but a list, and at most MAX_MESH_ROUTES', () => {
    expect(meshRoutesOf(undefined)).toEqual([]);
    expect(meshRoutesOf({ routes: [good] })).toEqual([]);
    expect(meshRoutesOf(new Array(MAX_MESH_ROUTES + 5).fill(good))).toHaveLength(MAX_MESH_ROUTES);
  });
});
