import { vmHostConfig } from '../../../../../test/support/configs';
import { HostPortsExhaustedError } from '../vms.errors';
import { HostPorts } from './host-ports';
import { type PortProbe, SOCKET_PORT_PROBE } from './port-probe';

/**
 * A probe over a made-up host: `busy` ports cannot be bound; free picks come from `picks` (an
 * error: the kernel's refusal); the kernel picks from 32768-60999.
 */
function fakeProbe(busy: string[], picks: Array<number | Error>): PortProbe {
  return {
    isFree: (_host, port, protocol) => Promise.resolve(!busy.includes(`${port}/${protocol}`)),
    anyFree: () => {
      const pick = picks.shift() ?? 65000;
      return pick instanceof Error ? Promise.reject(pick) : Promise.resolve(pick);
    },
    pickRange: () => Promise.resolve('32768-60999'),
  };
}

/** What bind() to port 0 says when the kernel's range has no port left. */
function rangeExhausted(): Error {
  return Object.assign(new Error('listen EADDRINUSE: address already in use 10.8.0.21'), {
    code: 'EADDRINUSE',
  });
}

describe('HostPorts', () => {
  function hostPorts(
    busy: string[] = [],
    picks: Array<number | Error> = [],
    env: NodeJS.ProcessEnv = {},
  ): HostPorts {
    const ports = new HostPorts(
      vmHostConfig({ VM_NODE_ID: 'node-a', VM_WG_IP: '10.8.0.21', ...env }),
    );
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

  it("keeps VM_RESERVED_HOST_PORTS and the agent's own metrics port from VMs: refused when asked, never picked", async () => {
    const env = { VM_RESERVED_HOST_PORTS: '9300, 40002', VM_METRICS_ADDR: '10.8.0.21:9101' };
    await expect(
      hostPorts([], [], env).assign([{ guest_port: 80, protocol: 'tcp', host_port: 9300 }], []),
    ).rejects.toThrow(
      'ports[0].host_port: 9300/tcp on node node-a (10.8.0.21) is reserved by VM_RESERVED_HOST_PORTS; no VM was made',
    );
    await expect(
      hostPorts([], [], env).assign([{ guest_port: 80, protocol: 'tcp', host_port: 9101 }], []),
    ).rejects.toThrow('9101/tcp on node node-a (10.8.0.21) is a fleet daemon port');
    // TCP alone: a UDP forward may use the number.
    const udp = await hostPorts([], [40001], env).assign(
      [{ guest_port: 53, protocol: 'udp', host_port: 9300 }],
      [],
    );
    expect(udp[1]).toEqual({ host_port: 9300, guest_port: 53, protocol: 'udp' });
    // The kernel's picks skip them.
    const picked = await hostPorts([], [40002, 9101, 40003], env).assign([], []);
    expect(picked).toEqual([{ host_port: 40003, guest_port: 22, protocol: 'tcp' }]);
  });

  it('refuses (HostPortsExhaustedError) naming the VM and the range when no free port is left', async () => {
    // Every pick the kernel makes is a port a stopped VM keeps.
    const stopped = {
      vm_id: 'vm-0000000000000001',
      ports: [{ host_port: 40001, guest_port: 22, protocol: 'tcp' as const }],
    };
    const held = hostPorts([], Array<number>(20).fill(40001));
    const refusal = held.assign([], [stopped], 'vm-00000000000000a2');
    await expect(refusal).rejects.toBeInstanceOf(HostPortsExhaustedError);
    await expect(refusal).rejects.toThrow(
      'no free tcp host port for vm vm-00000000000000a2 on node node-a (10.8.0.21) in 32768-60999 (net.ipv4.ip_local_port_range): 20 picks were all held by its VMs (stopped ones too) or fleet daemons; no VM was made',
    );
    // The kernel's range all bound: the same refusal, for a udp port picked after SSH.
    await expect(
      hostPorts([], [40002, rangeExhausted()]).assign([{ guest_port: 53, protocol: 'udp' }], []),
    ).rejects.toThrow(
      'no free udp host port for a new VM on node node-a (10.8.0.21) in 32768-60999 (net.ipv4.ip_local_port_range): every port in it is bound; no VM was made',
    );
    // Any other bind failure is not the node's capacity: passed on as it was.
    const gone = Object.assign(new Error('listen EADDRNOTAVAIL'), { code: 'EADDRNOTAVAIL' });
    await expect(hostPorts([], [gone]).assign([], [])).rejects.toBe(gone);
  });

  it('reads the range the kernel picks free ports from', async () => {
    expect(await SOCKET_PORT_PROBE.pickRange()).toMatch(/^\d+-\d+$/);
  });
});
