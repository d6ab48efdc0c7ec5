import { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { IncomingMoveRequest, VmRecord, VmState } from '@app/fleet-domain';
import type { VmSidecar } from '../vms/files/vm-sidecar';
import { VmSidecars } from '../vms/files/vm-sidecars';
import { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { VmDriver } from '../vms/vm-driver';

/**
 * The VM as this node has it after a move in ended here (adopted: its sidecar complete, no
 * `restoring` mark), so a `done` or an abort asked again after this agent restarted (its memory
 * of the move gone) still hears the guest is this node's: whatever became of it since (powered
 * off, stopped, in error, moved on), the old node must never resume its stale copy. A move in
 * starts only where the VM has no files, and one rolled back leaves none: undefined then.
 */
export async function movedInHere(
  sidecars: VmSidecars,
  lifecycle: VmLifeCycles,
  driver: VmDriver,
  vmId: string,
): Promise<VmRecord | undefined> {
  const sidecar = await sidecars.of(vmId);
  if (!sidecar || sidecars.isStandIn(sidecar) || sidecar.restoring === true) return undefined;
  if (sidecar.error !== null) return lifecycle.recordOf(sidecar, VmState.Error);
  const running = (await driver.inspect(vmId, sidecar.driver)) === 'running';
  return lifecycle.recordOf(sidecar, running ? VmState.Running : VmState.Stopped);
}

export function lastLines(text: string): string {
  return text.trim().split('\n').slice(-2).join(' ').slice(0, 300);
}

export function address(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The host CPU's model name, as /proc/cpuinfo says it. */
export async function hostCpu(): Promise<string | undefined> {
  const info = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  return /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim().slice(0, 128);
}

/** Resolves once something listens at host:port; throws if `child` ended or time ran out. */
export async function listening(
  host: string,
  port: number,
  child: ChildProcess,
  withinMs: number,
): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`qemu-nbd ended at once (${child.exitCode})`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (performance.now() > deadline)
      throw new Error(`qemu-nbd not listening within ${withinMs} ms`);
    await pauseThen(50, undefined);
  }
}

export function pauseThen<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

/** What the new node is told of the VM moving to it (the machine, accelerator and CPU aside). */
export function incomingRequestOf(
  sidecar: VmSidecar,
  mode: 'live' | 'cold',
  diskBytes: number,
): Omit<IncomingMoveRequest, 'machine' | 'accel' | 'cpu'> {
  return {
    mode,
    vm_type: sidecar.vm_type,
    ram_mb: sidecar.ram_alloc_mb,
    vcpu_count: sidecar.vcpu_count,
    tenant_id: sidecar.tenant_id,
    ports: sidecar.forwards ?? sidecar.host_ports,
    ...(sidecar.disk_gb === undefined ? {} : { disk_gb: sidecar.disk_gb }),
    disk_bytes: diskBytes,
    ...(sidecar.copies ? { copies: sidecar.copies } : {}),
    desired_state: sidecar.desired_state,
  };
}
