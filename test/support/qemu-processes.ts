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
  const found: LiveQemu[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (
        basename(args[0] ?? '').startsWith('qemu-system-') &&
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

/** SIGKILLs every live QEMU process under `folder`, so none outlives a suite. */
export function killQemusUnder(folder: string): void {
  for (const { pid } of liveQemusUnder(folder)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}
