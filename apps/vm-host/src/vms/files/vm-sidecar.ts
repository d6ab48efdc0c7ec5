/** A VM's sidecar (`<vm_id>.json`): what it holds, and how one an older agent wrote is read. */
import {
  DesiredVmState,
  HostPort,
  MAX_HOST_PORTS_PER_VM,
  MAX_COPY_EVERY_S,
  MAX_VM_COPIES,
  MAX_VM_DISK_GB,
  MIN_COPY_EVERY_S,
  rfc3339ToEpochNanos,
} from '@app/fleet-domain';
import type { DriverRecord } from '../vm-driver';

/**
 * What the agent keeps of a VM beside it, so that a restarted (or killed) agent reports every
 * VM again at its first heartbeat: the heartbeat needs nothing that is not in here or in what
 * the driver tells of the running VM.
 */
export interface VmSidecar {
  vm_id: string;
  vm_type: string;
  tenant_id: string | null;
  ram_alloc_mb: number;
  vcpu_count: number;
  host_ports: HostPort[];
  /**
   * The VM's forwards for its whole life, SSH first, fixed when it was admitted: every start
   * forwards exactly these (one taken meanwhile fails the start, naming it). Absent on sidecars
   * written before published ports: such a VM keeps its SSH port where free, as it did.
   */
  forwards?: HostPort[];
  created_at: string;
  /** When the driver started the VM; null until then. */
  started_at: string | null;
  /** Why provisioning failed; the VM then stays listed in state Error until deleted. */
  error: string | null;
  /** The driver's own data (QEMU: pid, acceleration); only the driver reads it. */
  driver: DriverRecord;
  /**
   * Why the VM's last start ended up without the acceleration it was started for (KVM present
   * but failing, so the driver started it again under TCG); removed by a start without fallback.
   */
  accel_fallback?: string;
  /**
   * The Idempotency-Key (`<key_hash>.<request_hash>`) of the spawn that made the VM; a spawn
   * with the same value within a day of created_at gets this VM back. Null without one.
   */
  idempotency_key: string | null;
  /**
   * What the operator asked the VM to be: running from its create, stopped once stopped. The
   * agent starts a VM that should run and has no process (after a reboot, a crash) again.
   */
  desired_state: DesiredVmState;
  /** How its process last ended without an operator asking; null if it never did. */
  last_exit: string | null;
  /** Its disk's virtual size in GiB as its create asked; absent: the base image's size. */
  disk_gb?: number;
  /**
   * The deadline (RFC 3339) of the spawn that made it, kept only until its files are made, when
   * the spawn is answered: a create cut short while it is still here was never answered, and
   * once it has passed the controller has stopped waiting (and may have placed it elsewhere).
   */
  spawn_deadline?: string;
  /**
   * What the VM's disk was restored from (`backup <chain_id>/<index>` or `replica ...`), for
   * good: its disk is that copy's, never made again from the base image.
   */
  restored_from?: string;
  /**
   * Written with the sidecar of a restore and removed once its disk is whole: a restore cut
   * short while it is here is rolled back (its sidecar is the recorded intent, its disk partial).
   */
  restoring?: boolean;
  /**
   * Its copy policy from the spawn (the controller's defaults resolved), reported with it in
   * every heartbeat; absent: none recorded (a VM made before copies).
   */
  copies?: { count: number; every_s: number };
}

/** A sidecar as agents before VmDriver wrote it: QEMU's pid and acceleration at the top level. */
type QemuEraSidecar = Omit<VmSidecar, 'driver'> & { accel: 'kvm' | 'tcg'; pid: number | null };

/** Fields added since the first sidecars; absent from those older agents wrote. */
type LaterFields = 'idempotency_key' | 'desired_state' | 'last_exit';

type StoredSidecar = (Omit<VmSidecar, LaterFields> | Omit<QemuEraSidecar, LaterFields>) &
  Partial<Pick<VmSidecar, LaterFields>>;

const positiveInteger = (value: unknown): boolean =>
  typeof value === 'number' && Number.isInteger(value) && value > 0;
const stringOrNull = (value: unknown): boolean => value === null || typeof value === 'string';

/** The fields every heartbeat needs are there, so a damaged sidecar never reaches the wire. */
export function isStoredSidecar(value: unknown, vmId: string): value is StoredSidecar {
  if (typeof value !== 'object' || value === null) return false;
  const stored = value as Record<string, unknown>;
  return (
    stored.vm_id === vmId &&
    typeof stored.vm_type === 'string' &&
    stringOrNull(stored.tenant_id) &&
    positiveInteger(stored.ram_alloc_mb) &&
    positiveInteger(stored.vcpu_count) &&
    Array.isArray(stored.host_ports) &&
    typeof stored.created_at === 'string' &&
    stringOrNull(stored.started_at) &&
    stringOrNull(stored.error) &&
    (typeof stored.driver === 'object' ? stored.driver !== null : 'pid' in stored)
  );
}

/**
 * VMs outlive agent upgrades: a sidecar written before VmDriver reads as a QEMU one, one
 * written before idempotency keys as made without one, one written before desired states as a
 * VM that should run (as every VM did then).
 */
export function upgradeSidecar(stored: StoredSidecar): VmSidecar {
  const later = {
    idempotency_key: stored.idempotency_key ?? null,
    desired_state:
      stored.desired_state === DesiredVmState.Stopped
        ? DesiredVmState.Stopped
        : DesiredVmState.Running,
    last_exit: typeof stored.last_exit === 'string' ? stored.last_exit : null,
  };
  const forwards = validForwards(stored.forwards);
  // A size that is no create's is none: it reaches qemu-img's command line.
  const disk_gb =
    positiveInteger(stored.disk_gb) && stored.disk_gb! <= MAX_VM_DISK_GB
      ? stored.disk_gb
      : undefined;
  // Compared as a time: anything else is none.
  const spawn_deadline =
    typeof stored.spawn_deadline === 'string' && rfc3339ToEpochNanos(stored.spawn_deadline) !== null
      ? stored.spawn_deadline
      : undefined;
  // Shown in log lines only; anything but bounded text is none.
  const restored_from =
    typeof stored.restored_from === 'string' && stored.restored_from.length <= 200
      ? stored.restored_from
      : undefined;
  const restoring = stored.restoring === true ? true : undefined;
  const restore = {
    ...(restored_from === undefined ? {} : { restored_from }),
    ...(restoring === undefined ? {} : { restoring }),
  };
  const copies = validCopies(stored.copies);
  if ('driver' in stored) {
    const { restored_from: _from, restoring: _restoring, ...rest } = stored;
    return { ...rest, ...later, forwards, disk_gb, spawn_deadline, copies, ...restore };
  }
  const { accel, pid, restored_from: _from, restoring: _restoring, ...rest } = stored;
  return {
    ...rest,
    ...restore,
    driver: { kind: 'qemu', accel, pid },
    ...later,
    forwards,
    disk_gb,
    spawn_deadline,
    copies,
  };
}

/** A stored policy within CopyPolicy's bounds, else none: it reaches the heartbeat. */
function validCopies(stored: unknown): VmSidecar['copies'] {
  if (typeof stored !== 'object' || stored === null) return undefined;
  const { count, every_s } = stored as Record<string, unknown>;
  const whole = (value: unknown, min: number, max: number): value is number =>
    typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
  if (!whole(count, 0, MAX_VM_COPIES) || !whole(every_s, MIN_COPY_EVERY_S, MAX_COPY_EVERY_S)) {
    return undefined;
  }
  return { count, every_s };
}

/** Stored forwards that make sense (ports and a protocol), else none: they reach QEMU's command line. */
function validForwards(stored: unknown): HostPort[] | undefined {
  // As many as a VmRecord's host_ports may carry: a longer list is no agent's writing.
  if (!Array.isArray(stored) || stored.length > MAX_HOST_PORTS_PER_VM) return undefined;
  const port = (value: unknown): boolean => positiveInteger(value) && (value as number) <= 65535;
  const valid = stored.every(
    (forward: Partial<HostPort> | null) =>
      typeof forward === 'object' &&
      forward !== null &&
      port(forward.host_port) &&
      port(forward.guest_port) &&
      (forward.protocol === 'tcp' || forward.protocol === 'udp'),
  );
  return valid ? (stored as HostPort[]) : undefined;
}
