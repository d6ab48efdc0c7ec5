import { PLACEMENT_MARGIN_MB } from './fleet.constants';

/**
 * Memory the hypervisor process takes beside a guest's RAM (device model, I/O buffers), per VM
 * under KVM. A booted guest's QEMU measures about 40-60 MB beyond its guest's pages; the rest is
 * headroom.
 */
export const HYPERVISOR_OVERHEAD_MB = 256;

/**
 * The translation cache QEMU is given under TCG (`-accel tcg,tb-size=...`), in MiB. QEMU's own
 * default is 1 GiB, filled as a guest runs: a 512 MB guest's QEMU grew past 1.2 GB resident.
 */
export const TCG_TRANSLATION_CACHE_MB = 64;

/** The overhead of a VM under TCG: the hypervisor's, plus its bounded translation cache. */
export const TCG_OVERHEAD_MB = HYPERVISOR_OVERHEAD_MB + TCG_TRANSLATION_CACHE_MB;

/** RAM a node keeps free beyond every VM's own: the controller's placement margin. */
const RAM_MARGIN_MB = PLACEMENT_MARGIN_MB;

/** A VM that holds its resources on a node: still provisioning, or its process alive. */
export interface CommittedVm {
  ramAllocMb: number;
  vcpuCount: number;
  /** Resident memory of its process now, in MiB; 0 while it has none. */
  rssMb: number;
  /** What its hypervisor takes beside its RAM (TCG_OVERHEAD_MB under TCG); the default's without. */
  overheadMb?: number;
}

/** The host's memory as the kernel reports it, in MiB. */
export interface HostMemory {
  /** MemTotal. */
  totalMb: number;
  /** MemTotal - MemAvailable: what the kernel could not hand out now, guests included. */
  usedMb: number;
}

function sum<T>(items: readonly T[], value: (item: T) => number): number {
  return items.reduce((total, item) => total + value(item), 0);
}

/**
 * The RAM committed on this node, as its heartbeat reports it in `ram_used_mb`: what the host
 * uses without its guests (sampled use less the guests' resident memory, never below 0), plus
 * every committed VM's full `ram_alloc_mb`, used or not, plus the hypervisor's overhead per VM
 * (its own when it says, e.g. TCG's with its translation cache).
 */
export function committedRamMb(
  host: HostMemory,
  vms: readonly CommittedVm[],
  overheadMb = HYPERVISOR_OVERHEAD_MB,
): number {
  const withoutGuests = Math.max(0, host.usedMb - sum(vms, (vm) => vm.rssMb));
  return Math.round(
    withoutGuests + sum(vms, (vm) => vm.ramAllocMb + (vm.overheadMb ?? overheadMb)),
  );
}

/** What a node can hold. */
export interface NodeCapacity {
  memory: HostMemory;
  cpuCores: number;
  /** vCPUs allowed per logical core (VM_VCPU_OVERCOMMIT). */
  vcpuOvercommit: number;
}

/**
 * Why a new VM does not fit beside the committed ones, naming each field at fault and the
 * numbers; undefined when it fits. RAM: total - committed - margin must hold `ramMb`. vCPUs:
 * the committed ones and the new ones together at most cores x overcommit.
 */
export function capacityRefusal(
  wanted: { ramMb: number; vcpuCount: number },
  node: NodeCapacity,
  vms: readonly CommittedVm[],
): string | undefined {
  const reasons: string[] = [];
  const totalMb = node.memory.totalMb;
  const committableMb = Math.max(0, totalMb - committedRamMb(node.memory, vms) - RAM_MARGIN_MB);
  if (wanted.ramMb > committableMb) {
    reasons.push(
      `ram_mb: ${wanted.ramMb} MB does not fit on this node: ${committableMb} MB committable of ${totalMb} MB (margin ${RAM_MARGIN_MB} MB)`,
    );
  }
  const vcpuLimit = Math.floor(node.cpuCores * node.vcpuOvercommit);
  const vcpusFree = Math.max(0, vcpuLimit - sum(vms, (vm) => vm.vcpuCount));
  if (wanted.vcpuCount > vcpusFree) {
    reasons.push(
      `vcpu_count: ${wanted.vcpuCount} vCPUs do not fit on this node: ${vcpusFree} committable of ${vcpuLimit} (${node.cpuCores} cores x VM_VCPU_OVERCOMMIT ${node.vcpuOvercommit})`,
    );
  }
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}
