import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../../test/support/configs';
import { GuestIsolation, GuestIsolationMode, runWithInput } from './guest-isolation';

describe('GuestIsolation', () => {
  let folder: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'guest-isolation-'));
  });

  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  /** An isolation already set up as `mode` (no cgroup or nft touched by a unit test). */
  function isolation(mode: GuestIsolationMode, cgroupDir?: string): GuestIsolation {
    return Object.assign(new GuestIsolation(vmHostConfig({ VM_WG_IP: '127.0.0.1' })), {
      setup: Promise.resolve({ mode, cgroupDir }),
    });
  }

  it('starts QEMU as it is when guests have no cgroup', async () => {
    expect(await isolation('none').guestCommand('qemu-system-x86_64', ['-name', 'x'])).toEqual({
      command: 'qemu-system-x86_64',
      args: ['-name', 'x'],
    });
  });

  it("starts it in the guests' cgroup: its own pid written there first, then the program with its arguments untouched", async () => {
    writeFileSync(join(folder, 'cgroup.procs'), '');
    const hostile = ['a b', '$(touch pwned)', '"; exit 1'];
    const { command, args } = await isolation('unit', folder).guestCommand(process.execPath, [
      '-e',
      'process.stdout.write(process.pid + " " + JSON.stringify(process.argv.slice(1)))',
      ...hostile,
    ]);
    const [pid, argv] = execFileSync(command, args, { cwd: folder }).toString().split(/ (.*)/s);
    expect(readFileSync(join(folder, 'cgroup.procs'), 'utf8').trim()).toBe(pid);
    expect(JSON.parse(argv)).toEqual(hostile);
  });

  it("refuses guests the fleet's ports it knows of, its stores' and VM_RESERVED_HOST_PORTS", () => {
    const config = vmHostConfig({
      VM_WG_IP: '127.0.0.1',
      VM_SPAWN_PORT: '9300',
      VM_METRICS_ADDR: '127.0.0.1:9101',
      VM_RESERVED_HOST_PORTS: '9207',
    });
    expect(new GuestIsolation(config).refusedPorts().sort((a, b) => a - b)).toEqual([
      2379, 2380, 6379, 9101, 9203, 9204, 9206, 9207, 9300,
    ]);
  });

  it('judges a program that exits without reading its input by its exit status, never by the broken pipe', async () => {
    const input = 'x'.repeat(8 << 20);
    await expect(runWithInput('true', [], input)).resolves.toBeUndefined();
    await expect(runWithInput('false', [], input)).rejects.toThrow('false failed');
  });
});
