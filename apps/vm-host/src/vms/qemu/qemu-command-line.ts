import { dirname, join } from 'node:path';
import { MAX_HOST_PORTS_PER_VM, TCG_TRANSLATION_CACHE_MB, type HostPort } from '@app/fleet-domain';

/**
 * The second QMP socket, beside the first: the copies' own (apps/vm-host/src/vms/copies/). No
 * longer a name than `qmp.sock`, so every VM_DISK_DIR whose socket paths fitted still fits.
 */
export const COPY_QMP_SOCKET = 'qmp-copy';

/**
 * The serial port's socket, beside the QMP sockets: the interactive console's
 * (apps/vm-host/src/vms/terminal/). Shorter than `qmp.sock`, so every VM_DISK_DIR whose socket
 * paths fitted still fits.
 */
export const SERIAL_SOCKET = 'serial';

/** How QEMU runs a guest: KVM when asked for and usable, else TCG (emulation). */
export type QemuAccel = 'kvm' | 'tcg';

/**
 * The CPU models a VM is tried with under KVM, in order: the host's own CPU; the same without
 * arch-capabilities, whose MSR 0x10a some nested hosts refuse (`failed to set MSR 0x10a`); then
 * a named model that asks nothing of the host's MSRs. After the last, TCG (VM_ACCEL=auto).
 */
export const KVM_CPU_MODELS = ['host', 'host,-arch-capabilities', 'qemu64'] as const;
export type KvmCpuModel = (typeof KVM_CPU_MODELS)[number];

export { SSH_GUEST_PORT } from '@app/fleet-domain';

/** What a guest's virtio RNG may take from the host each second (its kernel wants 32 bytes). */
const GUEST_ENTROPY_BYTES_PER_S = 4096;

export interface QemuLaunch {
  vmId: string;
  ramMb: number;
  vcpuCount: number;
  accel: QemuAccel;
  /** Under KVM, the CPU model (KVM_CPU_MODELS); `host` when not given. Unused under TCG. */
  cpuModel?: KvmCpuModel;
  disk: string;
  seedIso: string;
  qmpSocket: string;
  pidFile: string;
  serialLog: string;
  /** The node's mesh address (VM_WG_IP): every forward listens there, never on all interfaces. */
  forwardAddress: string;
  /** What is forwarded from forwardAddress into the guest, SSH first. */
  forwards: readonly HostPort[];
  /** A VM moved in live: its source's machine type, pinned (`pc-q35-7.2`); else `q35`. */
  machine?: string;
  /** A VM moved in live: QEMU waits, paused, for its migration (apps/vm-host/src/moves/). */
  incoming?: boolean;
}

/** QEMU reads commas in option values as separators unless doubled. */
function optionValue(value: string): string {
  return value.replace(/,/g, ',,');
}

/**
 * The QEMU command line of a VM. Only the agent's own paths, the vm_id it made and numbers
 * validated as integers reach it; vm_type and tenant_id never do.
 */
export function qemuArgs(launch: QemuLaunch): string[] {
  return [
    '-name',
    `guest=${launch.vmId}`,
    ...accelArgs(launch),
    '-m',
    `${launch.ramMb}M`,
    '-smp',
    String(launch.vcpuCount),
    '-drive',
    `if=virtio,format=qcow2,file=${optionValue(launch.disk)}`,
    '-drive',
    `if=virtio,format=raw,readonly=on,file=${optionValue(launch.seedIso)}`,
    // User-mode networking with QEMU's defaults (10.0.2.0/24, the guest at 10.0.2.15): the
    // project's image sets that address itself, without DHCP (deploy/images).
    '-netdev',
    `user,id=net0,${hostForwards(launch.forwardAddress, launch.forwards)}`,
    '-device',
    'virtio-net-pci,netdev=net0',
    // Entropy from the host at boot: without, a guest's kernel took seconds under TCG to seed its
    // random pool, and ssh-keygen at the first boot waited for it. Bounded: the guest cannot make
    // QEMU read more than this from the host.
    '-device',
    `virtio-rng-pci,max-bytes=${GUEST_ENTROPY_BYTES_PER_S},period=1000`,
    '-qmp',
    `unix:${optionValue(launch.qmpSocket)},server=on,wait=off`,
    '-qmp',
    `unix:${optionValue(join(dirname(launch.qmpSocket), COPY_QMP_SOCKET))},server=on,wait=off`,
    '-pidfile',
    launch.pidFile,
    // The serial port on a socket, for one interactive console at a time, and written to the log
    // all the same, connected or not. Appended to, so the agent can cut a log a guest grows
    // without bound (capConsoleLog). VMs started before it have `file,id=serial0,...` instead:
    // nothing reads the chardev back from a command line, so both forms are adopted alike.
    '-chardev',
    `socket,id=serial0,path=${optionValue(join(dirname(launch.qmpSocket), SERIAL_SOCKET))},server=on,wait=off,logfile=${optionValue(launch.serialLog)},logappend=on`,
    '-serial',
    'chardev:serial0',
    '-display',
    'none',
    '-monitor',
    'none',
    '-daemonize',
    ...(launch.incoming ? ['-incoming', 'defer', '-S'] : []),
  ];
}

/** The machine, accelerator and CPU options of a launch. */
export function accelArgs({
  accel,
  cpuModel,
  machine = 'q35',
}: Pick<QemuLaunch, 'accel' | 'cpuModel' | 'machine'>): string[] {
  if (accel === 'kvm') return ['-machine', `${machine},accel=kvm`, '-cpu', cpuModel ?? 'host'];
  // Under TCG, a bounded translation cache: QEMU's default of 1 GiB grows as the guest runs,
  // memory counted nowhere (see TCG_OVERHEAD_MB).
  return ['-machine', machine, '-accel', `tcg,tb-size=${TCG_TRANSLATION_CACHE_MB}`];
}

/**
 * User-mode networking's forwards (`hostfwd=tcp:10.0.0.1:8080-:80,hostfwd=udp:...`), each
 * bound to the one address given. Only validated integers and `tcp`/`udp` reach it.
 */
export function hostForwards(address: string, forwards: readonly HostPort[]): string {
  const host = address.includes(':') ? `[${address}]` : address;
  return forwards
    .map(
      ({ protocol, host_port, guest_port }) =>
        `hostfwd=${protocol === 'udp' ? 'udp' : 'tcp'}:${host}:${host_port}-:${guest_port}`,
    )
    .join(',');
}

/** The value after `flag` in a command line. */
export function optionOf(args: readonly string[], flag: string): string | undefined {
  const index = args.indexOf(flag);
  return index >= 0 ? args[index + 1] : undefined;
}

/** The vm_id qemuArgs named the guest, read back from a command line. */
export function guestOf(args: readonly string[]): string | undefined {
  return /^guest=(.+)$/.exec(optionOf(args, '-name') ?? '')?.[1];
}

/** The acceleration qemuArgs asked for, read back from a command line. */
export function accelOf(args: readonly string[]): QemuAccel {
  const kvm =
    optionOf(args, '-machine')?.includes('accel=kvm') === true ||
    /^(?:accel=)?kvm(?:,|$)/.test(optionOf(args, '-accel') ?? '');
  return kvm ? 'kvm' : 'tcg';
}

/** A whole number above 0 from the text of a number, else undefined. */
function positive(digits: string | undefined, times = 1): number | undefined {
  const value = Number(digits) * times;
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/**
 * The guest RAM in MiB on a command line (`-m 128M` as qemuArgs writes it; QEMU also takes a
 * bare number of MiB, a G suffix and `size=`), so a VM whose sidecar is lost still counts with
 * all it was given. Undefined in any other form.
 */
export function ramMbOf(args: readonly string[]): number | undefined {
  const memory = /^(?:size=)?(\d+)([MG]?)(?:,|$)/i.exec(optionOf(args, '-m') ?? '');
  if (!memory) return undefined;
  return positive(memory[1], memory[2].toUpperCase() === 'G' ? 1024 : 1);
}

/** The vCPUs on a command line (`-smp 2`, or `cpus=2,...`); undefined in any other form. */
export function vcpuCountOf(args: readonly string[]): number | undefined {
  return positive(/^(?:cpus=)?(\d+)(?:,|$)/.exec(optionOf(args, '-smp') ?? '')?.[1]);
}

/** The forwards qemuArgs put on the command line (SSH first), read back from it. */
export function forwardedPorts(args: readonly string[]): HostPort[] {
  const forwards = (optionOf(args, '-netdev') ?? '').matchAll(
    /hostfwd=(tcp|udp):(?:\[[^\]]*\]|[^:,]*):(\d+)-:(\d+)/g,
  );
  return [...forwards].slice(0, MAX_HOST_PORTS_PER_VM).map((forward) => ({
    host_port: Number(forward[2]),
    guest_port: Number(forward[3]),
    protocol: forward[1] as 'tcp' | 'udp',
  }));
}
