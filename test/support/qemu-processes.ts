import { readFileSync, readdirSync } from 'node:fs';

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
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (
        cmdline.startsWith('qemu-system-x86_64') &&
        cmdline.includes(folder) &&
        !/^\d+ \(.*\) Z/.test(stat)
      ) {
        found.push({ pid: Number(entry), args: cmdline.split('\0') });
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
