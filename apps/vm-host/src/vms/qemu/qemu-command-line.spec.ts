import { TCG_TRANSLATION_CACHE_MB } from '@app/fleet-domain';
import {
  KVM_CPU_MODELS,
  accelOf,
  forwardedPorts,
  guestOf,
  optionOf,
  qemuArgs,
  ramMbOf,
  vcpuCountOf,
} from './qemu-command-line';

const launch = {
  vmId: 'vm-0123456789abcdef',
  ramMb: 128,
  vcpuCount: 2,
  accel: 'tcg' as const,
  disk: '/var/lib/vm-fleet/disks/vm-0123456789abcdef.qcow2',
  seedIso: '/var/lib/vm-fleet/run/vm-0123456789abcdef/seed.iso',
  qmpSocket: '/var/lib/vm-fleet/run/vm-0123456789abcdef/qmp.sock',
  pidFile: '/var/lib/vm-fleet/run/vm-0123456789abcdef/qemu.pid',
  serialLog: '/var/lib/vm-fleet/run/vm-0123456789abcdef/serial.log',
  forwardAddress: '10.8.0.21',
  forwards: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' as const }],
};

function option(args: string[], flag: string): string[] {
  return args.flatMap((arg, index) => (arg === flag ? [args[index + 1]] : []));
}

describe('qemuArgs', () => {
  it('sizes the VM from the request and daemonizes with a pidfile and two QMP sockets (the copies their own)', () => {
    const args = qemuArgs(launch);
    expect(option(args, '-m')).toEqual(['128M']);
    expect(option(args, '-smp')).toEqual(['2']);
    expect(option(args, '-pidfile')).toEqual([launch.pidFile]);
    expect(option(args, '-qmp')).toEqual([
      `unix:${launch.qmpSocket},server=on,wait=off`,
      'unix:/var/lib/vm-fleet/run/vm-0123456789abcdef/qmp-copy,server=on,wait=off',
    ]);
    expect(args).toContain('-daemonize');
  });

  it('uses TCG, with a translation cache of TCG_TRANSLATION_CACHE_MB, unless the launch says KVM', () => {
    expect(option(qemuArgs(launch), '-machine')).toEqual(['q35']);
    expect(option(qemuArgs(launch), '-accel')).toEqual([`tcg,tb-size=${TCG_TRANSLATION_CACHE_MB}`]);
    expect(TCG_TRANSLATION_CACHE_MB).toBeLessThanOrEqual(128);
    expect(option(qemuArgs(launch), '-cpu')).toEqual([]);
    const kvm = qemuArgs({ ...launch, accel: 'kvm' });
    expect(option(kvm, '-machine')).toEqual(['q35,accel=kvm']);
    expect(option(kvm, '-cpu')).toEqual(['host']);
  });

  it.each(KVM_CPU_MODELS)('runs KVM with the CPU model %s, one -cpu, no -accel', (cpuModel) => {
    const args = qemuArgs({ ...launch, accel: 'kvm', cpuModel });
    expect(option(args, '-machine')).toEqual(['q35,accel=kvm']);
    expect(option(args, '-cpu')).toEqual([cpuModel]);
    expect(option(args, '-accel')).toEqual([]);
    expect(accelOf(args)).toBe('kvm');
  });

  it('tries the host CPU first and ends with a named model that needs no host MSRs', () => {
    expect(KVM_CPU_MODELS).toEqual(['host', 'host,-arch-capabilities', 'qemu64']);
  });

  it('leaves the CPU model out under TCG', () => {
    const args = qemuArgs({ ...launch, accel: 'tcg', cpuModel: 'host' });
    expect(option(args, '-cpu')).toEqual([]);
    expect(accelOf(args)).toBe('tcg');
  });

  it("gives the guest a virtio RNG, bounded per second, and QEMU's default user network (the project's image sets 10.0.2.15 itself)", () => {
    const args = qemuArgs(launch);
    expect(option(args, '-device')).toContain('virtio-rng-pci,max-bytes=4096,period=1000');
    expect(option(args, '-netdev')[0]).not.toMatch(/(^|,)(net|host|dhcpstart)=/);
  });

  it('forwards SSH on the node address and the checked port', () => {
    expect(option(qemuArgs(launch), '-netdev')).toEqual([
      'user,id=net0,hostfwd=tcp:10.8.0.21:40022-:22',
    ]);
    expect(option(qemuArgs({ ...launch, forwardAddress: 'fd00::21' }), '-netdev')).toEqual([
      'user,id=net0,hostfwd=tcp:[fd00::21]:40022-:22',
    ]);
  });

  it('forwards every published port, tcp and udp, on the node address only, SSH first', () => {
    const forwards = [
      { host_port: 40022, guest_port: 22, protocol: 'tcp' as const },
      { host_port: 8080, guest_port: 80, protocol: 'tcp' as const },
      { host_port: 5353, guest_port: 53, protocol: 'udp' as const },
    ];
    const args = qemuArgs({ ...launch, forwards });
    expect(option(args, '-netdev')).toEqual([
      'user,id=net0,hostfwd=tcp:10.8.0.21:40022-:22,hostfwd=tcp:10.8.0.21:8080-:80,hostfwd=udp:10.8.0.21:5353-:53',
    ]);
    expect(forwardedPorts(args)).toEqual(forwards);
    expect(forwardedPorts(qemuArgs({ ...launch, forwardAddress: 'fd00::21', forwards }))).toEqual(
      forwards,
    );
  });

  it('puts the serial port on a socket beside the QMP one, written to the log all the same', () => {
    const args = qemuArgs(launch);
    expect(option(args, '-chardev')).toEqual([
      'socket,id=serial0,path=/var/lib/vm-fleet/run/vm-0123456789abcdef/serial,server=on,wait=off,logfile=/var/lib/vm-fleet/run/vm-0123456789abcdef/serial.log,logappend=on',
    ]);
    expect(option(args, '-serial')).toEqual(['chardev:serial0']);
  });

  it('doubles commas in paths, so a folder name cannot add QEMU options', () => {
    const args = qemuArgs({ ...launch, disk: '/srv/a,file=/etc/shadow/x.qcow2' });
    expect(option(args, '-drive')[0]).toBe(
      'if=virtio,format=qcow2,file=/srv/a,,file=/etc/shadow/x.qcow2',
    );
  });
});

describe('reading a QEMU command line back', () => {
  it('finds the value after a flag, and none for a flag it does not have', () => {
    const args = qemuArgs(launch);
    expect(optionOf(args, '-pidfile')).toBe(launch.pidFile);
    expect(optionOf(args, '-kernel')).toBeUndefined();
    expect(optionOf(['-name'], '-name')).toBeUndefined();
  });

  it('reads back the guest name, the acceleration and the SSH forward qemuArgs wrote', () => {
    for (const forwardAddress of ['10.8.0.21', 'fd00::21']) {
      for (const accel of ['kvm', 'tcg'] as const) {
        const args = qemuArgs({ ...launch, forwardAddress, accel });
        expect(guestOf(args)).toBe(launch.vmId);
        expect(accelOf(args)).toBe(accel);
        expect(forwardedPorts(args)).toEqual([
          { host_port: 40022, guest_port: 22, protocol: 'tcp' },
        ]);
      }
    }
  });

  it('reads a command line without those options as no guest, TCG and no ports', () => {
    const bare = ['qemu-system-x86_64', '-name', 'web', '-netdev', 'user,id=net0'];
    expect(guestOf(bare)).toBeUndefined();
    expect(accelOf(bare)).toBe('tcg');
    // As agents before the bounded translation cache started it, or another tool.
    expect(accelOf([...bare, '-machine', 'q35,accel=kvm'])).toBe('kvm');
    expect(accelOf([...bare, '-accel', 'kvm'])).toBe('kvm');
    expect(accelOf([...bare, '-machine', 'q35,accel=tcg'])).toBe('tcg');
    expect(forwardedPorts(bare)).toEqual([]);
    expect(ramMbOf(bare)).toBeUndefined();
    expect(vcpuCountOf(bare)).toBeUndefined();
  });

  it('reads back the RAM and vCPUs qemuArgs gave, and the other forms QEMU takes', () => {
    const args = qemuArgs({ ...launch, ramMb: 12_288, vcpuCount: 4 });
    expect(ramMbOf(args)).toBe(12_288);
    expect(vcpuCountOf(args)).toBe(4);
    const ram = (value: string): number | undefined => ramMbOf(['-m', value]);
    expect([ram('512'), ram('2G'), ram('2g'), ram('size=1024M,slots=2,maxmem=4G')]).toEqual([
      512, 2_048, 2_048, 1_024,
    ]);
    expect([vcpuCountOf(['-smp', 'cpus=3,sockets=1']), vcpuCountOf(['-smp', '2,cores=2'])]).toEqual(
      [3, 2],
    );
  });

  it.each(['0M', '-1M', '1.5G', '2T', 'lots', ''])('reads -m %p as no RAM it knows', (value) => {
    expect(ramMbOf(['-m', value])).toBeUndefined();
  });

  it.each(['0', 'two', 'sockets=2', '99999999999999999999'])(
    'reads -smp %p as no vCPU count it knows',
    (value) => {
      expect(vcpuCountOf(['-smp', value])).toBeUndefined();
    },
  );
});
