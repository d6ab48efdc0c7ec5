import { Injectable } from '@nestjs/common';
import { readFile, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { HostFactsPaths } from './host-facts.service';

/** A live process as /proc shows it. */
export interface HostProcess {
  pid: number;
  /** Its command line, one element per argument (the process may have set it to anything). */
  args: string[];
  /** Its real uid (/proc/<pid>/status), undefined when unreadable. */
  uid?: number;
  /** The program it runs (/proc/<pid>/exe), undefined when not readable (another user's). */
  exe?: string;
}

/** The kernel's process table, read from /proc: what runs, whatever any file says. */
@Injectable()
export class ProcessTable {
  constructor(private readonly paths: HostFactsPaths) {}

  /**
   * Every live process whose command line `matches` (zombies are not live); a process that
   * ends while it is read is left out.
   */
  async list(matches: (process: HostProcess) => boolean): Promise<HostProcess[]> {
    const names = await readdir(this.paths.proc).catch(() => [] as string[]);
    const found = await Promise.all(
      names.filter((name) => /^[1-9]\d*$/.test(name)).map((name) => this.get(Number(name))),
    );
    return found.filter((process): process is HostProcess => !!process && matches(process));
  }

  /** The process with this pid while it is live, else undefined. */
  async get(pid: number): Promise<HostProcess | undefined> {
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    try {
      const dir = join(this.paths.proc, String(pid));
      const args = (await readFile(join(dir, 'cmdline'), 'utf8')).split('\0');
      if (args[args.length - 1] === '') args.pop();
      // Kernel threads have no command line; nothing of ours is one.
      if (args.length === 0) return undefined;
      const stat = await readFile(join(dir, 'stat'), 'utf8');
      // The state follows the command name, which may itself hold ") ".
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state === 'Z' || state === 'X') return undefined;
      const status = await readFile(join(dir, 'status'), 'utf8').catch(() => '');
      const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      const exe = await this.exeOf(pid);
      return { pid, args, uid: uid === undefined ? undefined : Number(uid), exe };
    } catch {
      return undefined;
    }
  }

  /** The program a process runs; undefined when it may not be read or the process is gone. */
  protected async exeOf(pid: number): Promise<string | undefined> {
    return readlink(join(this.paths.proc, String(pid), 'exe')).catch(() => undefined);
  }

  /** The process's resident memory in MiB; 0 once it is gone. */
  async residentMb(pid: number): Promise<number> {
    try {
      const status = await readFile(join(this.paths.proc, String(pid), 'status'), 'utf8');
      const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
      return kb ? Number(kb) / 1024 : 0;
    } catch {
      return 0;
    }
  }
}
