import { GUEST_NETWORK, isPasstOf, passtArgs, passtForwards } from './passt';

const launch = {
  socket: '/var/lib/vm-fleet/run/vm-0123456789abcdef/net.sock',
  pidFile: '/var/lib/vm-fleet/run/vm-0123456789abcdef/passt.pid',
  forwardAddress: '10.8.0.21',
  forwards: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' as const }],
};

function option(args: string[], flag: string): string[] {
  return args.flatMap((arg, index) => (arg === flag ? [args[index + 1]] : []));
}

describe('passtArgs', () => {
  it("gives the guest the image's own addresses, and never maps the gateway to the host", () => {
    const args = passtArgs(launch);
    expect(args).toContain('--no-map-gw');
    expect(args).toContain('--one-off');
    expect(option(args, '--address')).toEqual(['10.0.2.15']);
    expect(option(args, '--netmask')).toEqual(['24']);
    expect(option(args, '--gateway')).toEqual([GUEST_NETWORK.gateway]);
    expect(option(args, '--dns-forward')).toEqual(['10.0.2.3']);
    expect(option(args, '--socket')).toEqual([launch.socket]);
    expect(option(args, '--pid')).toEqual([launch.pidFile]);
    expect(option(args, '--runas')).toEqual([]);
    expect(option(args, '--interface')).toEqual([]);
    expect(option(passtArgs({ ...launch, runAs: 0, interfaceName: 'eth1' }), '--runas')).toEqual([
      '0',
    ]);
    expect(option(passtArgs({ ...launch, interfaceName: 'eth1' }), '--interface')).toEqual([
      'eth1',
    ]);
  });

  it('forwards SSH alone on the node address, and no UDP port (passt would mirror the TCP ones)', () => {
    const args = passtArgs(launch);
    expect(option(args, '--tcp-ports')).toEqual(['10.8.0.21/40022:22']);
    expect(option(args, '--udp-ports')).toEqual(['none']);
  });

  it('forwards every published port, tcp and udp, on the node address only, SSH first, and reads them back', () => {
    const forwards = [
      { host_port: 40022, guest_port: 22, protocol: 'tcp' as const },
      { host_port: 8080, guest_port: 80, protocol: 'tcp' as const },
      { host_port: 5353, guest_port: 53, protocol: 'udp' as const },
    ];
    for (const forwardAddress of ['10.8.0.21', 'fd00::21']) {
      const args = passtArgs({ ...launch, forwardAddress, forwards });
      expect(option(args, '--tcp-ports')).toEqual([
        `${forwardAddress}/40022:22`,
        `${forwardAddress}/8080:80`,
      ]);
      expect(option(args, '--udp-ports')).toEqual([`${forwardAddress}/5353:53`]);
      expect(passtForwards(['passt', ...args])).toEqual(forwards);
    }
  });

  it('reads a command line without forwards as none', () => {
    expect(passtForwards(['passt', '--tcp-ports', 'none', '--udp-ports', 'all'])).toEqual([]);
  });
});

describe('isPasstOf', () => {
  const args = ['passt', ...passtArgs(launch)];
  const uid = 1000;

  it("is the agent's passt of that socket and pidfile only", () => {
    expect(isPasstOf({ pid: 1, args, uid }, uid, launch.socket, launch.pidFile)).toBe(true);
    expect(
      isPasstOf(
        { pid: 1, args: ['/usr/bin/passt.avx2', ...args.slice(1)], uid },
        uid,
        launch.socket,
        launch.pidFile,
      ),
    ).toBe(true);
  });

  it("is not another user's, another program's, or another VM's", () => {
    expect(isPasstOf({ pid: 1, args, uid: 0 }, uid, launch.socket, launch.pidFile)).toBe(false);
    expect(isPasstOf({ pid: 1, args, uid }, uid, '/elsewhere/net.sock', launch.pidFile)).toBe(
      false,
    );
    expect(isPasstOf({ pid: 1, args, uid }, uid, launch.socket, '/elsewhere/passt.pid')).toBe(
      false,
    );
    expect(
      isPasstOf(
        { pid: 1, args: ['node', ...args.slice(1)], uid },
        uid,
        launch.socket,
        launch.pidFile,
      ),
    ).toBe(false);
  });
});
