import { readFileSync, readdirSync } from 'node:fs';
import { basename } from 'node:path';

/** A live QEMU process as /proc shows it: its pid and its arguments. */
export interface LiveQemu {
  pid: number;
  args: string[];
}

/**
 * Every live QEMU process (zombies do not count) whose command line mentions `folder`: a
 * suite's own, never another suite's or a real VM's.
 */
export function liveQemusUnder(folder: string): LiveQemu[] {
  return liveProcessesUnder(folder, /^qemu-system-/);
}

/** Every live passt (a VM's network) whose command line mentions `folder`. */
export function livePasstsUnder(folder: string): LiveQemu[] {
  return liveProcessesUnder(folder, /^passt(\.avx2)?$/);
}

function liveProcessesUnder(folder: string, program: RegExp): LiveQemu[] {
  const found: LiveQemu[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (
        program.test(basename(args[0] ?? '')) &&
        args.some((arg) => arg.includes(folder)) &&
        !/^\d+ \(.*\) Z/.test(stat)
      ) {
        found.push({ pid: Number(entry), args });
      }
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** SIGKILLs every live QEMU process (and its passt) under `folder`, so none outlives a suite. */
export function killQemusUnder(folder: string): void {
  for (const { pid } of [...liveQemusUnder(folder), ...livePasstsUnder(folder)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}
