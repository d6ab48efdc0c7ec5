import { randomUUID } from 'node:crypto';
import {
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  MAX_PUBLISHED_PORTS,
  MAX_VM_DISK_GB,
  MAX_VM_RAM_MB,
  MAX_COPY_EVERY_S,
  MAX_VM_COPIES,
  MAX_VM_VCPUS,
  MIN_COPY_EVERY_S,
  VM_TYPE_PATTERN,
  VM_TYPE_RULE,
  type PublishedPortRequest,
  publishedPortsProblem,
} from '@app/fleet-domain';
import { Option, SubCommand } from 'nest-commander';
import {
  ApiOptions,
  InvalidArgument,
  JsonApiCommand,
  parseFleetId,
  parseInteger,
} from '../api/command-options';
import { CliIo } from '../terminal/cli-io';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { FleetApiClient, FleetVm } from '../api/fleet-api.client';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { printable } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { DEFAULT_WAIT_TIMEOUT_S, WAIT_POLL_MS } from './vm-life-cycle.view';
import { DEFAULT_SSH_USER, sshTarget } from './vms.view';
import { parsePortFlag } from './port-flag';
import {
  WaitFlags,
  forwardOf,
  hostPort,
  parseWaitPort,
  waitForGuest,
  waitGoalOf,
} from './vm-reachability';

/** Seconds between two copies when --copies is given without --copy-every. */
export const DEFAULT_COPY_EVERY_S = 60;

/** The create's copy policy from --copies and --copy-every; undefined: the controller's. */
function copyPolicyOf(
  options: Pick<VmCreateOptions, 'copies' | 'copyEvery'>,
): { count: number; every_s: number } | undefined {
  if (options.copies === undefined) {
    if (options.copyEvery === undefined) return undefined;
    throw new CliFailure(
      '--copy-every needs --copies: how many copies to keep (0-2)',
      ExitCode.Usage,
    );
  }
  return { count: options.copies, every_s: options.copyEvery ?? DEFAULT_COPY_EVERY_S };
}

interface VmCreateOptions extends ApiOptions, WaitFlags {
  type: string;
  ram: number;
  vcpus: number;
  disk?: number;
  tenant?: string;
  node?: string;
  kvm?: boolean;
  key?: string;
  port?: PublishedPortRequest[];
  copies?: number;
  copyEvery?: number;
  timeout?: number;
  sshUser?: string;
}

@SubCommand({
  name: 'create',
  description:
    'create a VM (POST /v1/vms), always with an Idempotency-Key; --wait follows it until its SSH answers',
})
export class VmCreateCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
    private readonly io: CliIo,
  ) {
    super();
  }

  @Option({
    flags: '--type <vm_type>',
    description: `required: the VM type (${VM_TYPE_RULE})`,
    required: true,
  })
  parseType(value: string): string {
    if (!VM_TYPE_PATTERN.test(value)) throw new InvalidArgument(`It must be ${VM_TYPE_RULE}.`);
    return value;
  }

  @Option({ flags: '--ram <mb>', description: 'required: its RAM in MB', required: true })
  parseRam(value: string): number {
    return parseInteger(value, 1, MAX_VM_RAM_MB);
  }

  @Option({ flags: '--vcpus <n>', description: 'required: its virtual CPUs', required: true })
  parseVcpus(value: string): number {
    return parseInteger(value, 1, MAX_VM_VCPUS);
  }

  @Option({
    flags: '--disk <gb>',
    description: `its disk in GiB (disk_gb, 1-${MAX_VM_DISK_GB}, at least the base image's); the base image's size when absent`,
  })
  parseDisk(value: string): number {
    return parseInteger(value, 1, MAX_VM_DISK_GB);
  }

  @Option({ flags: '--tenant <tenant_id>', description: 'the tenant it belongs to' })
  parseTenant(value: string): string {
    return parseFleetId(value);
  }

  @Option({ flags: '--node <node_id>', description: 'place it on this node (preferred_node)' })
  parseNode(value: string): string {
    return parseFleetId(value);
  }

  @Option({ flags: '--kvm', description: 'prefer a node with KVM (prefer_kvm)' })
  parseKvm(): boolean {
    return true;
  }

  @Option({
    flags: '--key <key>',
    description: `the Idempotency-Key (${IDEMPOTENCY_KEY_RULE}); a new one when absent. The same key never makes a second VM`,
  })
  parseKey(value: string): string {
    if (!IDEMPOTENCY_KEY_PATTERN.test(value)) {
      throw new InvalidArgument(`It must be ${IDEMPOTENCY_KEY_RULE}.`);
    }
    return value;
  }

  @Option({
    flags: '--port <[host_port:]guest_port[/tcp|udp]>',
    description: `publish a guest port on its node's mesh address (repeatable, at most ${MAX_PUBLISHED_PORTS}; tcp unless /udp; host_port from 1024, a free one when absent), e.g. --port 80/tcp --port 5353:53/udp`,
  })
  parsePort(value: string, previous: PublishedPortRequest[] = []): PublishedPortRequest[] {
    return [...previous, parsePortFlag(value)];
  }

  @Option({
    flags: '--copies <n>',
    description: `copies of the VM kept on other nodes (0-${MAX_VM_COPIES}; 0: none); the controller's default (VM_FLEET_COPIES) when absent`,
  })
  parseCopies(value: string): number {
    return parseInteger(value, 0, MAX_VM_COPIES);
  }

  @Option({
    flags: '--copy-every <s>',
    description: `seconds between two copies (${MIN_COPY_EVERY_S}-${MAX_COPY_EVERY_S}; default ${DEFAULT_COPY_EVERY_S} with --copies); needs --copies`,
  })
  parseCopyEvery(value: string): number {
    return parseInteger(value, MIN_COPY_EVERY_S, MAX_COPY_EVERY_S);
  }

  @Option({
    flags: '--wait',
    description:
      'follow the VM until it is Running and its SSH answers with a banner (exit 0), or it is in Error (exit 1); then print the ssh line',
  })
  parseWait(): boolean {
    return true;
  }

  @Option({
    flags: '--wait-running',
    description: 'follow the VM only until it is Running (its guest may still be booting)',
  })
  parseWaitRunning(): boolean {
    return true;
  }

  @Option({
    flags: '--wait-port <guest_port>',
    description:
      "follow the VM until it is Running and this guest TCP port's forward (from --port) answers: a connection kept open or answered",
  })
  parseWaitPortOption(value: string): number {
    return parseWaitPort(value);
  }

  @Option({
    flags: '--timeout <s>',
    description: `how long --wait, --wait-running or --wait-port waits in all, in seconds (default: ${DEFAULT_WAIT_TIMEOUT_S}); then exit 1`,
  })
  parseTimeout(value: string): number {
    return parseInteger(value, 1, 86_400);
  }

  @Option({
    flags: '--ssh-user <user>',
    description: `the user the SSH target names (default: ${DEFAULT_SSH_USER})`,
  })
  parseSshUser(value: string): string {
    return parseFleetId(value);
  }

  async run(_: string[], options: VmCreateOptions): Promise<void> {
    const goal = waitGoalOf(options);
    const ports = options.port ?? [];
    const portProblem =
      ports.length > MAX_PUBLISHED_PORTS
        ? `at most ${MAX_PUBLISHED_PORTS} are published, not ${ports.length}`
        : publishedPortsProblem(ports);
    if (portProblem !== undefined) throw new CliFailure(`--port: ${portProblem}`, ExitCode.Usage);
    if (goal?.kind === 'port' && !ports.some((port) => isWaitedPort(port, goal))) {
      throw new CliFailure(
        `--wait-port ${goal.guestPort}: no --port publishes guest port ${goal.guestPort}/tcp`,
        ExitCode.Usage,
      );
    }
    const copies = copyPolicyOf(options);
    const api = this.connector.connect(options.endpoint);
    const key = options.key ?? randomUUID();
    let created: Awaited<ReturnType<FleetApiClient['createVm']>>;
    try {
      created = await api.createVm(
        {
          vm_type: options.type,
          ram_mb: options.ram,
          vcpu_count: options.vcpus,
          prefer_kvm: options.kvm ?? false,
          preferred_node: options.node ?? null,
          tenant_id: options.tenant ?? null,
          // Absent, not [], without --port: the body stays what it always was.
          ...(ports.length > 0 ? { ports } : {}),
          ...(options.disk === undefined ? {} : { disk_gb: options.disk }),
          // Absent without --copies: the controller's defaults apply.
          ...(copies === undefined ? {} : { copies }),
        },
        key,
      );
    } catch (error) {
      throw error instanceof CliFailure ? withKeyAdvice(error, key) : error;
    }
    const vm = created.data;
    if (goal === undefined) {
      if (options.json) this.terminal.print(created.json);
      else this.terminal.print(`created ${describeVm(vm)}`);
      return;
    }
    if (!options.json) this.terminal.print(`created ${describeVm(vm)}`);
    const startMs = this.io.now();
    const running = await this.waitForRunning(api, vm, options);
    const answering = await waitForGuest(this.io, this.terminal, api, running, {
      goal,
      startMs,
      timeoutS: options.timeout ?? DEFAULT_WAIT_TIMEOUT_S,
      timeoutFlag: '--timeout',
      forwardRequired: true,
    });
    if (options.json) {
      this.terminal.print(JSON.stringify(running));
      return;
    }
    if (running.node_silent_since !== undefined) {
      // A keyed retry can answer a VM nothing manages now: its node id may be gone (GET
      // /v1/nodes/{node_id} a 404) or heartbeated by another machine, whose wg_ip is elsewhere.
      this.terminal.print(
        `${printable(running.vm_id)} is Running on ${printable(running.node_id)} as last reported at ${printable(running.node_silent_since)}, but its node is silent (node_silent_since): no SSH target`,
      );
      return;
    }
    const wgIp =
      answering?.wgIp ??
      (forwardOf(running, { kind: 'ssh' }) !== undefined
        ? (await api.node(running.node_id)).data.wg_ip
        : undefined);
    const ssh = sshTarget(running, wgIp, options.sshUser ?? DEFAULT_SSH_USER);
    this.terminal.print(
      `${printable(running.vm_id)} is Running on ${printable(running.node_id)}${ssh === undefined ? '' : `: ${ssh}`}`,
    );
    if (answering?.port !== undefined && goal.kind === 'port') {
      this.terminal.print(
        `guest port ${goal.guestPort}/tcp answers at ${hostPort(answering.wgIp, answering.port)}`,
      );
    }
  }

  /** Polls GET /v1/vms until the VM is Running; throws when it is in Error or time is up. */
  private async waitForRunning(
    api: FleetApiClient,
    created: FleetVm,
    options: VmCreateOptions,
  ): Promise<FleetVm> {
    const timeoutS = options.timeout ?? DEFAULT_WAIT_TIMEOUT_S;
    const start = this.io.now();
    let last: FleetVm | undefined = created;
    for (;;) {
      const waited = Math.floor((this.io.now() - start) / 1000);
      if (last?.state === 'Running') return last;
      if (last?.state === 'Error') {
        throw new CliFailure(
          `${printable(last.vm_id)} is in Error on ${printable(last.node_id)}`,
          ExitCode.Refused,
        );
      }
      const vmId = printable(created.vm_id);
      this.terminal.progress(
        last === undefined
          ? `${vmId}: not listed (yet), ${waited} s`
          : `${vmId} on ${printable(last.node_id)}${last.node_silent_since === undefined ? '' : ' (node silent)'}: ${last.state}, ${waited} s`,
      );
      if (this.io.now() - start >= timeoutS * 1000) {
        throw new CliFailure(
          `${vmId} is ${last === undefined ? 'not listed' : `still ${last.state}`} after ${timeoutS} s (--timeout)`,
          ExitCode.Refused,
        );
      }
      await this.io.sleep(WAIT_POLL_MS);
      try {
        const listed = await api.vms(options.tenant);
        last = listed.data.find((vm) => vm.vm_id === created.vm_id);
      } catch (error) {
        // A controller restarting is waited for like a VM booting, within the same timeout.
        if (!(error instanceof CliFailure) || error.exitCode !== ExitCode.Unreachable) throw error;
      }
    }
  }
}

/** True for a --port that publishes the guest TCP port --wait-port waits for. */
function isWaitedPort(port: PublishedPortRequest, goal: { guestPort: number }): boolean {
  return port.guest_port === goal.guestPort && port.protocol === 'tcp';
}

/** One line about a VM, its strings made printable. */
function describeVm(vm: FleetVm): string {
  return printable(
    `${vm.vm_id} (${vm.vm_type}, ${vm.ram_alloc_mb} MB, ${vm.vcpu_count} vCPU) on ${vm.node_id}: ${vm.state}`,
  );
}

/**
 * A failed create never hides its key: whenever the request may have reached an agent (no
 * answer in time, a reset, any 5xx), the exact `--key` to retry with, saying the VM may exist;
 * when it provably reached none (the controller was never connected to; a 503: placed on no
 * node), it says so. A 4xx is the controller's refusal: nothing was made.
 */
export function withKeyAdvice(failure: CliFailure, key: string): CliFailure {
  const { status, neverSent } = failure.reach;
  let advice: string | undefined;
  if (failure.exitCode === ExitCode.Unreachable) {
    advice = neverSent
      ? `the controller was never reached, so no VM was made; run the same command with --key ${key} to try again`
      : `the VM may exist: run the same command with --key ${key} to find out without creating a second one`;
  } else if (status === 503) {
    advice = `no node was asked to make it by this request; run the same command with --key ${key} to try again (the same key never makes a second VM)`;
  } else if (status !== undefined && status >= 500) {
    advice = `the VM may exist: run the same command with --key ${key} to find out without creating a second one`;
  }
  if (advice === undefined) return failure;
  return new CliFailure(`${failure.message}\n${advice}`, failure.exitCode, failure.reach);
}
