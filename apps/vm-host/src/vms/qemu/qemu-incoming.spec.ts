import { createServer } from 'node:net';
import type { HostPort } from '@app/fleet-domain';
import type { VmFiles } from '../files/vm-files';
import type { QemuLaunch } from './qemu-command-line';
import { launchIncoming } from './qemu-incoming';
import { QemuRunFiles } from './qemu-record';

describe('launchIncoming: a VM moved in live', () => {
  it("starts QEMU without the VM's TCP forwards (taken at the switchover), yet answers them all as its host ports", async () => {
    const files = {
      disk: (vmId: string) => `/disks/${vmId}.qcow2`,
      runDir: (vmId: string) => `/disks/run/${vmId}`,
    } as unknown as VmFiles;
    const launched: QemuLaunch[] = [];
    const forwards: HostPort[] = [
      // Ports nothing binds on this test host's 127.0.0.1 (the kernel's range is below them).
      { host_port: 64_122, guest_port: 22, protocol: 'tcp' },
      { host_port: 64_180, guest_port: 80, protocol: 'tcp' },
      { host_port: 64_153, guest_port: 53, protocol: 'udp' },
    ];
    // The bridge holds a TCP port meanwhile (MovePortBridge): no refusal for it.
    const bridge = createServer();
    await new Promise<void>((resolve) =>
      bridge.listen({ host: '127.0.0.1', port: 64_180 }, resolve),
    );
    const started = await launchIncoming(
      {
        wgIp: '127.0.0.1',
        files,
        paths: new QemuRunFiles(files),
        launch: (launch) => {
          launched.push(launch);
          return Promise.resolve(4242);
        },
      },
      { vmId: 'vm-1', vmType: 'web', ramMb: 512, vcpuCount: 1, forwards },
      { machine: 'pc-q35-7.2', accel: 'tcg' },
    );
    expect(launched).toHaveLength(1);
    expect(launched[0]).toMatchObject({ incoming: true, machine: 'pc-q35-7.2' });
    expect(launched[0].forwards).toEqual([forwards[2]]);
    expect(started.hostPorts).toEqual(forwards);
    expect(started.record).toEqual({ kind: 'qemu', accel: 'tcg', pid: 4242 });
    await new Promise((resolve) => bridge.close(resolve));
  });
});
