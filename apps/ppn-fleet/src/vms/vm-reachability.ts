import type { FleetApiClient, FleetVm } from '../api/fleet-api.client';
import { InvalidArgument } from '../api/command-options';
import { CliFailure, ExitCode } from '../api/exit-codes';
import type { CliIo, PortAnswer } from '../terminal/cli-io';
import { printable } from '../terminal/printable';
import type { Terminal } from '../terminal/terminal';
import { WAIT_POLL_MS } from './vm-life-cycle.view';

/**
 * What `--wait` waits for once the VM is Running: `ssh` (plain --wait) until its SSH forward
 * says an SSH banner, `port` (--wait-port) until the guest's service behind a TCP port's forward
 * says something (a banner, or the answer to PORT_REQUEST), `running` (--wait-running) for
 * nothing more. A connection accepted and held open is not an answer: QEMU's forward accepts
 * one at once and holds it while the guest is still booting.
 */
export type WaitGoal = { kind: 'running' } | { kind: 'ssh' } | { kind: 'port'; guestPort: number };

/** How long one look watches a connection for a banner, or for it to stay open. */
export const PORT_WATCH_MS = 2_000;

/**
 * What --wait-port sends a port that says nothing first: an HTTP request, which an HTTP server
 * answers with its status line, and most other services with an error of their own. Either is
 * the guest's service answering end to end.
 */
export const PORT_REQUEST = 'HEAD / HTTP/1.0\r\nUser-Agent: ppn-fleet\r\n\r\n';

/** What SSH servers say first (RFC 4253 §4.2). */
export const SSH_BANNER_PREFIX = 'SSH-2.0-';

export interface WaitFlags {
  wait?: boolean;
  waitRunning?: boolean;
  waitPort?: number;
}

/** The goal the flags ask for; undefined without any of them. */
export function waitGoalOf(flags: WaitFlags): WaitGoal | undefined {
  if (flags.waitPort !== undefined && flags.waitRunning) {
    throw new CliFailure(
      '--wait-port and --wait-running ask for different things; give one',
      ExitCode.Usage,
    );
  }
  if (flags.waitPort !== undefined) return { kind: 'port', guestPort: flags.waitPort };
  if (flags.waitRunning) return { kind: 'running' };
  return flags.wait ? { kind: 'ssh' } : undefined;
}

/** `80` or `80/tcp`: a guest TCP port (UDP has no connection to wait for). */
export function parseWaitPort(value: string): number {
  const port = /^(\d{1,5})(?:\/(tcp|udp))?$/.exec(value);
  if (port?.[2] === 'udp') {
    throw new InvalidArgument(
      'Only a tcp port can be waited for: UDP has no connection to accept.',
    );
  }
  const number = Number(port?.[1]);
  if (!port || number < 1 || number > 65_535) {
    throw new InvalidArgument('It must be a guest TCP port from 1 to 65535, e.g. 80 or 80/tcp.');
  }
  return number;
}

/** The VM's forward of the guest TCP port the goal waits for; undefined when it has none. */
export function forwardOf(
  vm: Pick<FleetVm, 'host_ports'>,
  goal: WaitGoal,
): FleetVm['host_ports'][number] | undefined {
  if (goal.kind === 'running') return undefined;
  const guestPort = goal.kind === 'ssh' ? 22 : goal.guestPort;
  return vm.host_ports.find((port) => port.guest_port === guestPort && port.protocol === 'tcp');
}

/** What the goal waits for, in a few words. */
function awaited(goal: WaitGoal): string {
  return goal.kind === 'port' ? `guest port ${goal.guestPort}/tcp` : 'SSH';
}

/** True once the answer is what the goal waits for. */
export function answers(goal: WaitGoal, answer: PortAnswer): boolean {
  if (answer.kind !== 'open') return false;
  return goal.kind === 'ssh' ? answer.text.startsWith(SSH_BANNER_PREFIX) : answer.text !== '';
}

/** Why the answer is not yet what the goal waits for. */
function notYet(goal: WaitGoal, answer: PortAnswer): string {
  if (answer.kind === 'refused') return 'connection refused or unanswered';
  if (answer.kind === 'closed') {
    return goal.kind === 'ssh'
      ? 'connection reset: sshd in the guest is not up yet'
      : `accepted and closed: nothing listens on guest port ${goal.kind === 'port' ? goal.guestPort : 22} yet`;
  }
  if (goal.kind === 'port') {
    return "connected, but nothing answered a request: the forward holds the connection until the guest's service is up";
  }
  return answer.text === '' ? 'connected, no SSH banner yet' : 'connected, not an SSH banner';
}

/** host:port, an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Looks at the forward (`host`:`port`) every WAIT_POLL_MS until it answers as the goal asks,
 * with a progress line on stderr each time; past `deadlineMs` (io.now()), a CliFailure saying
 * what it last saw. `startMs`: when the wait began, for the seconds shown.
 */
export async function waitUntilAnswering(
  io: CliIo,
  terminal: Terminal,
  wait: { vmId: string; host: string; port: number; goal: WaitGoal; startMs: number },
  deadlineMs: number,
  timeoutFlag: string,
): Promise<void> {
  const { vmId, host, port, goal, startMs } = wait;
  const where = hostPort(host, port);
  for (;;) {
    const answer = await io.probePort(
      host,
      port,
      PORT_WATCH_MS,
      goal.kind === 'port' ? PORT_REQUEST : undefined,
    );
    if (answers(goal, answer)) return;
    const why = notYet(goal, answer);
    const waited = Math.floor((io.now() - startMs) / 1000);
    terminal.progress(
      `${printable(vmId)}: Running, waiting for ${awaited(goal)} at ${where} (${why}), ${waited} s`,
    );
    if (io.now() >= deadlineMs) {
      throw new CliFailure(
        `${printable(vmId)} is Running, but ${awaited(goal)} did not answer at ${where} within ${timeoutFlag}: ${why}`,
        ExitCode.Refused,
      );
    }
    await io.sleep(WAIT_POLL_MS);
  }
}

/** Where the VM's awaited forward answered: its node's wg_ip and the forward's host port. */
export interface AnsweringForward {
  wgIp: string;
  port: number;
}

/** How long a wait for the guest may take and what its give-up line names. */
export interface GuestWait {
  goal: WaitGoal;
  /** When the whole wait began (io.now()), for the deadline and the seconds shown. */
  startMs: number;
  timeoutS: number;
  /** The flag that set timeoutS, named in the give-up line; none for a derived time. */
  timeoutFlag?: string;
  /** A VM without the forward the goal waits for fails the wait (else nothing is waited for). */
  forwardRequired: boolean;
}

/**
 * Once the VM runs, waits until its forward answers as the goal asks (waitUntilAnswering, its
 * node's wg_ip from GET /v1/nodes/{node_id}) within `timeoutS` of `startMs`. Undefined, with
 * nothing asked, for a goal of Running alone, a VM whose node is silent (nothing to reach), or
 * one without that forward when it is not required.
 */
export async function waitForGuest(
  io: CliIo,
  terminal: Terminal,
  api: Pick<FleetApiClient, 'node'>,
  vm: Pick<FleetVm, 'vm_id' | 'node_id' | 'host_ports' | 'node_silent_since'>,
  wait: GuestWait,
): Promise<AnsweringForward | undefined> {
  const { goal, startMs, timeoutS, timeoutFlag } = wait;
  if (goal.kind === 'running' || vm.node_silent_since !== undefined) return undefined;
  const forward = forwardOf(vm, goal);
  if (forward === undefined) {
    if (!wait.forwardRequired) return undefined;
    throw new CliFailure(
      `${printable(vm.vm_id)} is Running but forwards no ${goal.kind === 'ssh' ? 'SSH (guest port 22/tcp)' : `guest port ${goal.guestPort}/tcp`}; nothing to wait for`,
      ExitCode.Refused,
    );
  }
  const wgIp = (await api.node(vm.node_id)).data.wg_ip;
  await waitUntilAnswering(
    io,
    terminal,
    { vmId: vm.vm_id, host: wgIp, port: forward.host_port, goal, startMs },
    startMs + timeoutS * 1000,
    `${timeoutS} s${timeoutFlag === undefined ? '' : ` (${timeoutFlag})`}`,
  );
  return { wgIp, port: forward.host_port };
}
