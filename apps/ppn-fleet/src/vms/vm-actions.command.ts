import { DEFAULT_STOP_TIMEOUT_S, MAX_STOP_TIMEOUT_S } from '@app/fleet-domain';
import { Option, SubCommand } from 'nest-commander';
import { OpsCommand, OpsOptions, parseInteger, requireFleetId } from '../api/command-options';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { FleetOpsApiClient, FleetVmWithLifeCycle, VmLifeCycle } from '../api/fleet-ops-api.client';
import { CliIo } from '../terminal/cli-io';
import { printable, printableConsoleText } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { waitForGuest } from './vm-reachability';
import { runInteractiveConsole } from './vm-terminal';
import { DEFAULT_SSH_USER, sshTarget } from './vms.view';
import {
  DEFAULT_WAIT_TIMEOUT_S,
  VmAction,
  WAIT_POLL_MS,
  describeVmState,
  waitOutcome,
} from './vm-life-cycle.view';

/** How often `vm console --follow` reads what the console printed since. */
export const CONSOLE_POLL_MS = 1_000;

/**
 * What --wait adds to a stop's or restart's --timeout (the guest's time to power down): QEMU
 * ended, and for a restart started again.
 */
export const WAIT_MARGIN_S = 120;

/** start and restart: --wait's old meaning. */
const WAIT_RUNNING_DESCRIPTION =
  'follow the VM only until it is Running (its guest may still be booting), as --wait did before';

interface VmActionOptions extends OpsOptions {
  force?: boolean;
  timeout?: number;
  wait?: boolean;
  waitRunning?: boolean;
}

/** What each action is called in the lines the CLI prints. */
const UNDER_WAY: Record<VmAction, string> = {
  stop: 'stopping',
  start: 'starting',
  restart: 'restarting',
};

/**
 * `vm stop|start|restart <vm_id>`: the action sent to the operations listener, which has the
 * VM's node's agent do it; with --wait, GET /v1/vms/{vm_id} followed until it is done.
 */
abstract class VmActionCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
    private readonly io: CliIo,
    private readonly action: VmAction,
  ) {
    super();
  }

  @Option({
    flags: '--wait',
    description:
      'follow the VM until the action is done (exit 0), it is in Error or time is up (exit 1); start and restart: done once its SSH answers with a banner, then the ssh line is printed',
  })
  parseWait(): boolean {
    return true;
  }

  protected abstract send(
    ops: FleetOpsApiClient,
    vmId: string,
    options: VmActionOptions,
  ): Promise<VmLifeCycle>;

  /** How long --wait waits, in seconds. */
  protected abstract waitS(options: VmActionOptions): number;

  /** How the action goes on, in a few words after "stopping <vm> on <node>". */
  protected abstract how(options: VmActionOptions): string;

  async run([vmId]: string[], options: VmActionOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    const ops = this.connector.connectOps(options.opsEndpoint);
    const lifeCycle = await this.send(ops, vmId, options);
    this.terminal.print(
      `${UNDER_WAY[this.action]} ${printable(lifeCycle.vm_id)}${this.how(options)}`,
    );
    if (!options.wait && !options.waitRunning) return;
    const startMs = this.io.now();
    const done = await this.waitUntilDone(ops, vmId, this.waitS(options), startMs);
    if (this.action === 'stop' || options.waitRunning) return;
    await this.waitForSsh(done, options, startMs);
  }

  /**
   * Once the VM runs again, waits until its SSH forward says a banner (within the wait's time
   * plus DEFAULT_WAIT_TIMEOUT_S for a restart: the guest boots after the power-down), then
   * prints the ssh line. The node's wg_ip comes from the API (VM_FLEET_ENDPOINT).
   */
  private async waitForSsh(
    vm: FleetVmWithLifeCycle,
    options: VmActionOptions,
    startMs: number,
  ): Promise<void> {
    // Connected only once a node is asked: a VM with nothing to reach needs no API settings.
    const api = { node: (nodeId: string) => this.connector.connect().node(nodeId) };
    const answering = await waitForGuest(this.io, this.terminal, api, vm, {
      goal: { kind: 'ssh' },
      startMs,
      timeoutS: this.waitS(options) + (this.action === 'restart' ? DEFAULT_WAIT_TIMEOUT_S : 0),
      forwardRequired: false,
    });
    if (answering === undefined) return;
    const ssh = sshTarget(vm, answering.wgIp, DEFAULT_SSH_USER, 'Running');
    this.terminal.print(`${printable(vm.vm_id)} answers SSH${ssh === undefined ? '' : `: ${ssh}`}`);
  }

  /** Polls GET /v1/vms/{vm_id} until waitOutcome says done (or failed), or time is up. */
  private async waitUntilDone(
    ops: FleetOpsApiClient,
    vmId: string,
    timeoutS: number,
    start: number,
  ): Promise<FleetVmWithLifeCycle> {
    let last: FleetVmWithLifeCycle | undefined;
    for (;;) {
      await this.io.sleep(WAIT_POLL_MS);
      try {
        last = (await ops.vm(vmId)).data;
      } catch (error) {
        // A controller restarting is waited for, within the same timeout.
        if (!(error instanceof CliFailure) || error.exitCode !== ExitCode.Unreachable) throw error;
      }
      const waited = Math.floor((this.io.now() - start) / 1000);
      const state =
        last === undefined
          ? 'no answer'
          : last.life_cycle === null
            ? `${describeVmState(last, this.io.wallNow())} (its agent did not answer)`
            : describeVmState(last, this.io.wallNow());
      const outcome = last === undefined ? 'waiting' : waitOutcome(this.action, last);
      if (outcome === 'done' && last !== undefined) {
        this.terminal.print(`${printable(vmId)} is ${state}`);
        return last;
      }
      if (outcome === 'failed') {
        throw new CliFailure(`${printable(vmId)} is ${state}`, ExitCode.Refused);
      }
      this.terminal.progress(`${printable(vmId)}: ${state}, ${waited} s`);
      if (this.io.now() - start >= timeoutS * 1000) {
        throw new CliFailure(
          `${printable(vmId)} is still ${state} after ${timeoutS} s (--wait)`,
          ExitCode.Refused,
        );
      }
    }
  }
}

/** A stop's or restart's options: --force and the guest's time to power down. */
abstract class VmPowerDownCommand extends VmActionCommand {
  @Option({
    flags: '--force',
    description: 'end QEMU at once (restart: reset in place), without asking the guest first',
  })
  parseForce(): boolean {
    return true;
  }

  @Option({
    flags: '--timeout <s>',
    description: `how long the guest has to power down after the ACPI request before QEMU is ended (default: ${DEFAULT_STOP_TIMEOUT_S}); --wait waits that plus ${WAIT_MARGIN_S} s`,
  })
  parseTimeout(value: string): number {
    return parseInteger(value, 1, MAX_STOP_TIMEOUT_S);
  }

  protected request(options: VmActionOptions): { force: boolean; timeout_s: number } {
    return {
      force: options.force ?? false,
      timeout_s: options.timeout ?? DEFAULT_STOP_TIMEOUT_S,
    };
  }

  protected waitS(options: VmActionOptions): number {
    return (options.timeout ?? DEFAULT_STOP_TIMEOUT_S) + WAIT_MARGIN_S;
  }
}

@SubCommand({
  name: 'stop',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to stop' },
  description:
    "stop a VM and keep it stopped, through its node's agent (the operations listener's POST /v1/vms/{vm_id}/stop)",
})
export class VmStopCommand extends VmPowerDownCommand {
  constructor(connector: FleetApiConnector, terminal: Terminal, io: CliIo) {
    super(connector, terminal, io, 'stop');
  }

  protected async send(ops: FleetOpsApiClient, vmId: string, options: VmActionOptions) {
    return (await ops.stop(vmId, this.request(options))).data;
  }

  protected how(options: VmActionOptions): string {
    const { force, timeout_s } = this.request(options);
    return force ? ': QEMU ended at once' : `: ACPI power-down, QEMU ended after ${timeout_s} s`;
  }
}

@SubCommand({
  name: 'restart',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to restart' },
  description:
    "restart a VM through its node's agent (the operations listener's POST /v1/vms/{vm_id}/restart)",
})
export class VmRestartCommand extends VmPowerDownCommand {
  constructor(connector: FleetApiConnector, terminal: Terminal, io: CliIo) {
    super(connector, terminal, io, 'restart');
  }

  @Option({ flags: '--wait-running', description: WAIT_RUNNING_DESCRIPTION })
  parseWaitRunning(): boolean {
    return true;
  }

  protected async send(ops: FleetOpsApiClient, vmId: string, options: VmActionOptions) {
    return (await ops.restart(vmId, this.request(options))).data;
  }

  protected how(options: VmActionOptions): string {
    const { force, timeout_s } = this.request(options);
    return force
      ? ': reset in place'
      : `: stopped (ACPI, QEMU ended after ${timeout_s} s) and started again`;
  }
}

@SubCommand({
  name: 'start',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to start' },
  description:
    "start a stopped VM through its node's agent (the operations listener's POST /v1/vms/{vm_id}/start)",
})
export class VmStartCommand extends VmActionCommand {
  constructor(connector: FleetApiConnector, terminal: Terminal, io: CliIo) {
    super(connector, terminal, io, 'start');
  }

  @Option({ flags: '--wait-running', description: WAIT_RUNNING_DESCRIPTION })
  parseWaitRunning(): boolean {
    return true;
  }

  @Option({
    flags: '--timeout <s>',
    description: `how long --wait waits, in seconds (default: ${DEFAULT_WAIT_TIMEOUT_S})`,
  })
  parseTimeout(value: string): number {
    return parseInteger(value, 1, 86_400);
  }

  protected async send(ops: FleetOpsApiClient, vmId: string) {
    return (await ops.start(vmId)).data;
  }

  protected waitS(options: VmActionOptions): number {
    return options.timeout ?? DEFAULT_WAIT_TIMEOUT_S;
  }

  protected how(): string {
    return '';
  }
}

interface VmConsoleOptions extends OpsOptions {
  follow?: boolean;
  interactive?: boolean;
}

@SubCommand({
  name: 'console',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM whose serial console to show' },
  description:
    "the end of a VM's serial console (the operations listener's GET /v1/vms/{vm_id}/console); --follow goes on printing it; --interactive types into it",
})
export class VmConsoleCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
    private readonly io: CliIo,
  ) {
    super();
  }

  @Option({
    flags: '--follow',
    description: 'go on printing what the console prints, about once a second, until Ctrl-C',
  })
  parseFollow(): boolean {
    return true;
  }

  @Option({
    flags: '--interactive',
    description:
      "the VM's serial port in this terminal, to log in and type (one session at a time); Ctrl-] leaves",
  })
  parseInteractive(): boolean {
    return true;
  }

  async run([vmId]: string[], options: VmConsoleOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    if (options.interactive) {
      const { opsEndpoint, apiToken } = this.connector.opsConnection(options.opsEndpoint);
      return runInteractiveConsole({
        vmId,
        opsEndpoint,
        ...(apiToken === undefined ? {} : { apiToken }),
        stdin: this.io.stdin,
        stdout: process.stdout,
        stderr: this.io.stderr,
      });
    }
    const ops = this.connector.connectOps(options.opsEndpoint);
    let read = (await ops.console(vmId)).data;
    this.terminal.write(printableConsoleText(read.text));
    if (!options.follow) {
      if (read.text !== '' && !read.text.endsWith('\n')) this.terminal.write('\n');
      return;
    }
    // Until Ctrl-C (SIGINT ends the process) or a refusal (the VM deleted: exit 1).
    for (;;) {
      await this.io.sleep(CONSOLE_POLL_MS);
      try {
        read = (await ops.console(vmId, read.next)).data;
      } catch (error) {
        // A controller restarting is waited for.
        if (!(error instanceof CliFailure) || error.exitCode !== ExitCode.Unreachable) throw error;
        this.terminal.progress(`${printable(vmId)}: ${printable(error.message)}; trying again`);
        continue;
      }
      if (read.reset)
        this.terminal.printError(`--- ${printable(vmId)}: the console began again ---`);
      this.terminal.write(printableConsoleText(read.text));
    }
  }
}
