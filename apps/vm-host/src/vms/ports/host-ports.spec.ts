import { vmHostConfig } from '../../../../../test/support/configs';
import { HostPorts } from './host-ports';
import type { PortProbe } from './port-probe';

/** A probe over a made-up host: `busy` ports cannot be bound; free picks come from `picks`. */
function fakeProbe(busy: string[], picks: number[]): PortProbe {
  return {
    isFree: (_host, port, protocol) => Promise.resolve(!busy.includes(`${port}/${protocol}`)),
    anyFree: () => Promise.resolve(picks.shift() ?? 65000),
  };
}

describe('HostPorts', () => {
  function hostPorts(busy: string[] = [], picks: number[] = []): HostPorts {
    const ports = new HostPorts(vmHostConfig({ VM_NODE_ID: 'node-a', VM_WG_IP: '10.8.0.21' }));
    ports.probe = fakeProbe(busy, picks);
    return ports;
  }

  it('gives SSH first, then the ports asked for in order, picking free ones where none is named', async () => {
    const forwards = await hostPorts([], [40001, 40002]).assign(
      [
        { guest_port: 80, protocol: 'tcp' },
        { guest_port: 53, protocol: 'udp', host_port: 5353 },
      ],
      [],
    );
    expect(forwards).toEqual([
      { host_port: 40001, guest_port: 22, protocol: 'tcp' },
      { host_port: 40002, guest_port: 80, protocol: 'tcp' },
      { host_port: 5353, guest_port: 53, protocol: 'udp' },
    ]);
  });

  it("never picks a port another VM holds (a stopped VM's too), nor one this create names", async () => {
    const forwards = await hostPorts([], [40001, 8080, 40003]).assign(
      [{ guest_port: 80, protocol: 'tcp', host_port: 8080 }],
      [
        {
          vm_id: 'vm-0000000000000001',
          ports: [{ host_port: 40001, guest_port: 22, protocol: 'tcp' }],
        },
      ],
    );
    expect(forwards.map(({ host_port }) => host_port)).toEqual([40003, 8080]);
  });

  it('tells tcp from udp: 5353/udp held leaves 5353/tcp free', async () => {
    const forwards = await hostPorts([], [40001]).assign(
      [{ guest_port: 53, protocol: 'tcp', host_port: 5353 }],
      [
        {
          vm_id: 'vm-0000000000000001',
          ports: [{ host_port: 5353, guest_port: 53, protocol: 'udp' }],
        },
      ],
    );
    expect(forwards[1]).toEqual({ host_port: 5353, guest_port: 53, protocol: 'tcp' });
  });

  it('refuses a named port in use by another process, or a fleet daemon port, naming it', async () => {
    await expect(
      hostPorts(['8443/tcp']).assign([{ guest_port: 443, protocol: 'tcp', host_port: 8443 }], []),
    ).rejects.toThrow(
      'ports[0].host_port: 8443/tcp on node node-a (10.8.0.21) is in use by another process; no VM was made',
    );
    for (const daemonPort of [9203, 9204, 9206]) {
      await expect(
        hostPorts().assign([{ guest_port: 80, protocol: 'tcp', host_port: daemonPort }], []),
      ).rejects.toThrow(`${daemonPort}/tcp on node node-a (10.8.0.21) is a fleet daemon port`);
    }
  });
});
