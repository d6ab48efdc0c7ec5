import type { Daemon } from './daemons';
import { liveQemusUnder } from './qemu-processes';

/** Looks (100 ms apart) that two QEMU processes of the VM on one node may last: one start. */
const SAME_NODE_LOOKS = 10;

/** One QEMU process of the VM as the watch saw it: on which node, first and last seen. */
export interface QemuLife {
  pid: number;
  nodeId: string;
  firstSeen: number;
  lastSeen: number;
}

/**
 * Every QEMU process of one VM on any machine of the fleet, looked at in /proc every 100 ms
 * (the namespaces share this machine's process table): which ran when, and whether two ever
 * ran at once. What an operator's "the VM never ran twice" means, seen from outside.
 */
export class QemuWatch {
  readonly lives = new Map<number, QemuLife>();
  /** Each moment two or more of the VM's QEMU processes were alive, with their nodes. */
  readonly overlaps: Array<{ at: number; nodes: string[] }> = [];
  private readonly timer: NodeJS.Timeout;
  /** Consecutive looks that saw two of its QEMU processes on one node. */
  private sameNodeLooks = 0;

  constructor(
    private readonly workDir: string,
    private readonly vmId: string,
    /** The node of a QEMU process, from its command line (its disk under the node's folder). */
    private readonly nodeOf: (args: string[]) => string,
  ) {
    this.look();
    this.timer = setInterval(() => this.look(), 100);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private look(): void {
    const now = Date.now();
    const seen = liveQemusUnder(this.workDir).filter(({ args }) =>
      args.some((arg) => arg.includes(`guest=${this.vmId}`)),
    );
    for (const { pid, args } of seen) {
      const life = this.lives.get(pid);
      if (life) life.lastSeen = now;
      else this.lives.set(pid, { pid, nodeId: this.nodeOf(args), firstSeen: now, lastSeen: now });
    }
    const nodes = seen.map(({ args }) => this.nodeOf(args));
    // On one node, QEMU's -daemonize forks twice: for a moment its first process waits for the
    // last, one start of one VM (the agent starts a VM under its lock). Two there for a second
    // are two VMs; two on two nodes are at once.
    this.sameNodeLooks = new Set(nodes).size < nodes.length ? this.sameNodeLooks + 1 : 0;
    if (new Set(nodes).size > 1 || this.sameNodeLooks >= SAME_NODE_LOOKS) {
      this.overlaps.push({ at: now, nodes });
    }
  }
}

/** A line an agent printed about the VM, when the test received it (ms since the epoch). */
export interface AgentLogLine {
  at: number;
  nodeId: string;
  line: string;
}

/**
 * The agents' lines about one VM (starts, stops, fences, superseded), each stamped when it
 * arrived: one timeline across the machines, their clocks being this machine's.
 */
export class AgentLogTimeline {
  readonly lines: AgentLogLine[] = [];

  constructor(private readonly vmId: string) {}

  /** Follows `agent` (of `nodeId`) from now on; call again for an agent started again. */
  follow(nodeId: string, agent: Daemon): void {
    let partial = '';
    const collect = (chunk: Buffer): void => {
      const text = partial + chunk.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      const at = Date.now();
      for (const line of lines) {
        if (line.includes(this.vmId)) this.lines.push({ at, nodeId, line });
      }
    };
    agent.process.stdout!.on('data', collect);
    agent.process.stderr!.on('data', collect);
  }

  /** The lines matching `pattern`, in order of arrival. */
  matching(pattern: RegExp): AgentLogLine[] {
    return this.lines.filter(({ line }) => pattern.test(line));
  }

  /** The timeline as text, for a failure's message. */
  toString(): string {
    return this.lines
      .map(({ at, nodeId, line }) => `${new Date(at).toISOString()} ${nodeId}: ${line.trim()}`)
      .join('\n');
  }
}
