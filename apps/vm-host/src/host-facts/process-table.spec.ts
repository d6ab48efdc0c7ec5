import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HostFactsPaths } from './host-facts.service';
import { ProcessTable } from './process-table';

describe('ProcessTable', () => {
  let proc: string;
  let table: ProcessTable;

  async function fakeProcess(
    pid: string,
    fields: {
      args: string[];
      state?: string;
      comm?: string;
      rssKb?: number;
      uid?: number;
      exe?: string;
    },
  ): Promise<void> {
    const dir = join(proc, pid);
    await mkdir(dir);
    await writeFile(join(dir, 'cmdline'), fields.args.map((arg) => `${arg}\0`).join(''));
    await writeFile(
      join(dir, 'stat'),
      `${pid} (${fields.comm ?? 'qemu-system-x86'}) ${fields.state ?? 'S'} 1 4242 4242 0 -1\n`,
    );
    await writeFile(
      join(dir, 'status'),
      `Name:\tqemu\n${fields.uid === undefined ? '' : `Uid:\t${fields.uid}\t0\t0\t0\n`}${fields.rssKb === undefined ? '' : `VmRSS:\t  ${fields.rssKb} kB\n`}`,
    );
    if (fields.exe) await symlink(fields.exe, join(dir, 'exe'));
  }

  beforeEach(async () => {
    proc = await mkdtemp(join(tmpdir(), 'proc-'));
    table = new ProcessTable(Object.assign(new HostFactsPaths(), { proc }));
    await fakeProcess('101', { args: ['qemu-system-x86_64', '-name', 'guest=vm-1'], rssKb: 43008 });
    await fakeProcess('102', { args: ['qemu-system-x86_64', '-name', 'guest=vm-2'], state: 'Z' });
    await fakeProcess('103', { args: [] });
    await fakeProcess('104', { args: ['qemu-system-x86_64', '-name', 'guest=vm-4'], comm: 'a) Z' });
    await fakeProcess('105', { args: ['sshd'] });
    await mkdir(join(proc, 'self'));
  });

  afterEach(async () => {
    await rm(proc, { recursive: true, force: true });
  });

  it('lists live processes whose command line matches; zombies, kernel threads and other names are not', async () => {
    const qemus = await table.list(({ args }) => args[0] === 'qemu-system-x86_64');
    expect(qemus.sort((a, b) => a.pid - b.pid)).toEqual([
      { pid: 101, args: ['qemu-system-x86_64', '-name', 'guest=vm-1'] },
      { pid: 104, args: ['qemu-system-x86_64', '-name', 'guest=vm-4'] },
    ]);
  });

  it('gets one process by pid while it lives', async () => {
    expect(await table.get(105)).toEqual({ pid: 105, args: ['sshd'] });
    expect(await table.get(102)).toBeUndefined();
    expect(await table.get(999)).toBeUndefined();
    expect(await table.get(-1)).toBeUndefined();
  });

  it('tells the real uid and the program of a process, undefined when it cannot be read', async () => {
    await fakeProcess('106', {
      args: ['qemu-system-x86_64'],
      uid: 1001,
      exe: '/usr/bin/qemu-system-x86_64',
    });
    expect(await table.get(106)).toEqual({
      pid: 106,
      args: ['qemu-system-x86_64'],
      uid: 1001,
      exe: '/usr/bin/qemu-system-x86_64',
    });
    expect(await table.get(105)).toEqual({
      pid: 105,
      args: ['sshd'],
      uid: undefined,
      exe: undefined,
    });
  });

  it('reads resident memory in MiB, 0 when unknown or gone', async () => {
    expect(await table.residentMb(101)).toBe(42);
    expect(await table.residentMb(102)).toBe(0);
    expect(await table.residentMb(999)).toBe(0);
  });

  it('reads this machine', async () => {
    const real = new ProcessTable(new HostFactsPaths());
    const self = await real.get(process.pid);
    expect(self?.args[0]).toBe(process.argv0);
    expect(self?.uid).toBe(process.getuid!());
    expect(self?.exe).toBe(await realpath(process.execPath));
    expect(await real.residentMb(process.pid)).toBeGreaterThan(0);
  });
});
