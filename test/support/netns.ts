import { execFileSync } from 'node:child_process';

/**
 * A test host of our own: a network namespace joined to this machine by a veth pair, the
 * host end at 10.201.<subnet>.1, the namespace end at 10.201.<subnet>.2. Lets two controllers
 * each bind the fixed port 9203 on one machine, as they would on two hosts. Needs root.
 */
export class TestHost {
  readonly hostAddress: string;
  readonly address: string;

  private constructor(
    readonly name: string,
    subnet: number,
  ) {
    this.hostAddress = `10.201.${subnet}.1`;
    this.address = `10.201.${subnet}.2`;
  }

  static create(name: string, subnet: number): TestHost {
    const host = new TestHost(name, subnet);
    host.remove();
    const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
    const outside = `${name}-h`.slice(0, 15);
    const inside = `${name}-n`.slice(0, 15);
    ip('netns', 'add', name);
    ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside);
    ip('link', 'set', inside, 'netns', name);
    ip('addr', 'add', `${host.hostAddress}/24`, 'dev', outside);
    ip('link', 'set', outside, 'up');
    ip('netns', 'exec', name, 'ip', 'addr', 'add', `${host.address}/24`, 'dev', inside);
    ip('netns', 'exec', name, 'ip', 'link', 'set', inside, 'up');
    ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
    return host;
  }

  /**
   * Every process in the namespace (`ip netns pids`): a node's agent and the QEMU processes it
   * started, which inherit its namespace wherever they daemonize to.
   */
  processes(): number[] {
    return execFileSync('ip', ['netns', 'pids', this.name], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => /^\d+$/.test(line))
      .map(Number);
  }

  /**
   * The machine killed whole, as a power cut leaves it: SIGKILL to every process of the
   * namespace at once. Returns the pids killed; `processes()` is empty once they are reaped.
   */
  killAll(): number[] {
    const pids = this.processes();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    return pids;
  }

  /** Deleting the namespace deletes its veth pair too. */
  remove(): void {
    try {
      execFileSync('ip', ['netns', 'del', this.name], { stdio: 'pipe' });
    } catch {
      // not there
    }
  }
}
