import { basename } from 'node:path';
import type { HostProcess, ProcessTable } from '../../host-facts/process-table';
import { guestOf, optionOf } from './qemu-command-line';

/** A live QEMU process of one of the agent's VMs, with the command line it was started with. */
export interface QemuProcess {
  pid: number;
  args: string[];
}

/** How often a stop looks again whether the processes it signalled are gone. */
const POLL_MS = 50;

/**
 * The agent's own QEMU processes on the host, found in the process table by what only a QEMU
 * the agent started has: its user, its program, `-name guest=<vm_id>` and that VM's pidfile
 * under this agent's VM_DISK_DIR. Anyone can fake a command line, so that alone never gets a
 * process adopted, reported or signalled.
 */
export class QemuProcesses {
  /** Only processes of this user are the agent's QEMUs. */
  private readonly agentUid = process.getuid!();

  constructor(
    private readonly table: ProcessTable,
    /** Where the agent has QEMU write a VM's pidfile. */
    private readonly pidFileOf: (vmId: string) => string,
  ) {}

  /** The vm_id a process runs, when it is a QEMU this agent started; undefined otherwise. */
  vmIdOf({ args, uid, exe }: HostProcess): string | undefined {
    if (uid === undefined || uid !== this.agentUid) return undefined;
    if (exe !== undefined && !basename(exe).startsWith('qemu-system-')) return undefined;
    if (!basename(args[0] ?? '').startsWith('qemu-system-')) return undefined;
    const vmId = guestOf(args);
    if (!vmId || optionOf(args, '-pidfile') !== this.pidFileOf(vmId)) return undefined;
    return vmId;
  }

  /** The live QEMU processes of these VMs, oldest pid first, by vm id, in one look. */
  async of(vmIds: readonly string[]): Promise<Map<string, QemuProcess[]>> {
    const wanted = new Set(vmIds);
    const byVm = new Map<string, QemuProcess[]>();
    const processes = await this.table.list((entry) => wanted.has(this.vmIdOf(entry) ?? ''));
    for (const entry of processes.sort((a, b) => a.pid - b.pid)) {
      const vmId = this.vmIdOf(entry)!;
      byVm.set(vmId, [...(byVm.get(vmId) ?? []), entry]);
    }
    return byVm;
  }

  /** Their resident memory together now, in MiB. */
  async residentMb(processes: readonly QemuProcess[]): Promise<number> {
    const resident = await Promise.all(processes.map(({ pid }) => this.table.residentMb(pid)));
    return resident.reduce((total, mb) => total + mb, 0);
  }

  /** True while the process is this VM's QEMU (not a zombie, not a reused pid). */
  async isAlive(pid: number, vmId: string): Promise<boolean> {
    const entry = await this.table.get(pid);
    return entry !== undefined && this.vmIdOf(entry) === vmId;
  }

  /** The pids still this VM's QEMU once all are gone or `withinMs` passed. */
  async survivors(pids: number[], vmId: string, withinMs: number): Promise<number[]> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const alive: number[] = [];
      for (const pid of pids) if (await this.isAlive(pid, vmId)) alive.push(pid);
      if (alive.length === 0 || Date.now() >= deadline) return alive;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
