import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import {
  FleetVmBackups,
  FleetVmWithLifeCycle,
  RestartVmRequest,
  StopVmRequest,
  VmConsole,
  VmConsoleQuery,
  VmLifeCycle,
  compareIds,
} from '@app/fleet-domain';
import { VmHostClient } from '../vms/vm-host.client';
import { AgentAnswer, AgentCallError, VmHostClientSettings } from '../vms/agent-calls';
import { ListedFleetVm, VmsService } from '../vms/vms.service';
import { agentConflictOf, describeAgentConflict } from './agent-conflicts';
import { CallLimit, SharedRead } from './shared-read';
import {
  VmAction,
  VmActionConflictError,
  VmAgentFailedError,
  VmNodeSilentError,
  VmNotOnItsNodeError,
  VmStartNoRoomError,
} from './vm-operations.errors';

/**
 * The longest the listing waits for its agents: a slow or silent one shows its VMs without a
 * life cycle rather than holding up every other node's, and a call not begun by then is not made.
 */
export const LIFE_CYCLE_LISTING_TIMEOUT_MS = 3_000;

/**
 * However many console pages and clients read the VMs, their agents are asked at most once per
 * this (every reader in between shares that answer), or per LISTING_BUSY_FACTOR times what the
 * last asking took when that is longer: the controller never spends more than about a quarter
 * of its time asking, whatever the fleet's size, and heartbeats keep the rest.
 */
export const LISTING_MIN_INTERVAL_MS = 2_000;
export const LISTING_BUSY_FACTOR = 4;

/** The most agents a listing asks at once. */
export const LISTING_AGENT_CALLS = 16;

/** The most VMs whose shared one-VM read is kept; past it they are all let go. */
const MAX_VM_READS = 1_000;

/** The agent's refusal of a VM it was not asked about, or its answer about another VM. */
const NOT_THIS_VM = 'answered about another vm';

/** Each live node's VMs' life cycles, by node id then VM id, as the agents last answered. */
type LifeCyclesByNode = Map<string, Map<string, VmLifeCycle>>;

/**
 * What the operations listener does: the VMs with their life cycles from their agents, and an
 * operator's stop, start, restart or console read sent to the agent of the VM's node with that
 * node's own credential. Every answer is the controller's own words about the agent's outcome.
 * The reads are shared (see SharedRead): any number of pages polling costs the agents, and the
 * controller, what one does.
 */
@Injectable()
export class VmOperationsService {
  private readonly logger = new Logger('VmOperations');
  private readonly agentCalls = new CallLimit(LISTING_AGENT_CALLS);
  private readonly lifeCycles: SharedRead<LifeCyclesByNode>;
  /** Each VM's life cycle as its agent last answered, by `<node_id>/<vm_id>`. */
  private readonly vmReads = new Map<string, SharedRead<VmLifeCycle | undefined>>();

  constructor(
    private readonly vms: VmsService,
    private readonly vmHost: VmHostClient,
    private readonly vmHostSettings: VmHostClientSettings,
    private readonly clock: Clock,
  ) {
    this.lifeCycles = new SharedRead(clock, LISTING_MIN_INTERVAL_MS, LISTING_BUSY_FACTOR, () =>
      this.askEveryAgent(),
    );
  }

  /**
   * Every VM as the API lists it, each with its life cycle as its agent last answered the
   * shared asking (askEveryAgent); null for a VM whose agent did not answer usably in time, or
   * which no live agent manages.
   */
  async listVms(tenantId?: string): Promise<FleetVmWithLifeCycle[]> {
    const [listed, byNode] = await Promise.all([
      this.vms.listWithNodes(tenantId),
      this.lifeCycles.get(),
    ]);
    return listed.map(({ vm, node, silent }) =>
      withLifeCycle(vm, silent ? undefined : byNode.get(node.node_id)?.get(vm.vm_id)),
    );
  }

  /**
   * One GET /v1/vm-life-cycles per live node listing VMs, LISTING_AGENT_CALLS at a time, all
   * within LIFE_CYCLE_LISTING_TIMEOUT_MS of the start.
   */
  private async askEveryAgent(): Promise<LifeCyclesByNode> {
    const listed = await this.vms.listWithNodes();
    const nodes = new Map(
      listed.filter(({ silent }) => !silent).map(({ node }) => [node.node_id, node]),
    );
    const timeoutMs = Math.min(LIFE_CYCLE_LISTING_TIMEOUT_MS, this.vmHostSettings.timeoutMs);
    const deadlineMs = this.clock.now() + timeoutMs;
    const byNode: LifeCyclesByNode = new Map();
    await Promise.all(
      [...nodes.values()]
        .sort((a, b) => compareIds(a.node_id, b.node_id))
        .map((node) =>
          this.agentCalls.run(async () => {
            const leftMs = Math.min(timeoutMs, deadlineMs - this.clock.now());
            // Its turn came too late: its VMs are shown without a life cycle this time.
            if (leftMs <= 0) return;
            const lifeCycles = await this.vmHost
              .lifeCycles(node, leftMs)
              .catch((error: unknown) => {
                // The client logged the detail; the VMs are shown without a life cycle.
                if (!(error instanceof AgentCallError)) throw error;
                return undefined;
              });
            if (lifeCycles === undefined) return;
            byNode.set(
              node.node_id,
              new Map(lifeCycles.map((lifeCycle) => [lifeCycle.vm_id, lifeCycle])),
            );
          }),
        ),
    );
    return byNode;
  }

  /**
   * One VM with its life cycle (null as in the listing); VmNotFoundError when none lists it.
   * The store is read at every call (a VM deleted a moment ago is gone at once); its agent's
   * answer is shared as the listing is: asked at most once per LISTING_MIN_INTERVAL_MS.
   */
  async getVm(vmId: string): Promise<FleetVmWithLifeCycle> {
    const { vm, node, silent } = await this.vms.findWithNode(vmId);
    if (silent) return withLifeCycle(vm, undefined);
    // Keyed by node too: a VM listed on another node since is asked of that node's agent.
    const key = `${node.node_id}/${vmId}`;
    let read = this.vmReads.get(key);
    if (read === undefined) {
      if (this.vmReads.size >= MAX_VM_READS) this.vmReads.clear();
      read = new SharedRead(this.clock, LISTING_MIN_INTERVAL_MS, LISTING_BUSY_FACTOR, () =>
        this.askAgentOf(node, vmId),
      );
      this.vmReads.set(key, read);
    }
    return withLifeCycle(vm, await read.get());
  }

  private async askAgentOf(
    node: ListedFleetVm['node'],
    vmId: string,
  ): Promise<VmLifeCycle | undefined> {
    const answer = await this.agentCalls
      .run(() => this.vmHost.lifeCycle(node, vmId))
      .catch((error: unknown) => {
        if (!(error instanceof AgentCallError)) throw error;
        return undefined;
      });
    if (answer?.kind !== 'answered') return undefined;
    if (answer.value.vm_id !== vmId) {
      this.logger.warn(`node ${node.node_id}: life cycle of vm ${vmId} ${NOT_THIS_VM}`);
      return undefined;
    }
    return answer.value;
  }

  stopVm(vmId: string, request: StopVmRequest): Promise<VmLifeCycle> {
    return this.act(
      vmId,
      'stop',
      (listed) => this.vmHost.stop(listed.node, vmId, request),
      how(request),
    );
  }

  startVm(vmId: string): Promise<VmLifeCycle> {
    return this.act(vmId, 'start', (listed) => this.vmHost.start(listed.node, vmId), '');
  }

  restartVm(vmId: string, request: RestartVmRequest): Promise<VmLifeCycle> {
    return this.act(
      vmId,
      'restart',
      (listed) => this.vmHost.restart(listed.node, vmId, request),
      how(request),
    );
  }

  /** A part of the VM's serial console, as its agent read it. */
  readConsole(vmId: string, query: VmConsoleQuery): Promise<VmConsole> {
    return this.act(vmId, 'console read', (listed) =>
      this.vmHost.console(listed.node, vmId, query),
    );
  }

  /** A backup of the VM to its node's VM_BACKUP_DIR, begun by its agent. */
  async backUpVm(vmId: string): Promise<FleetVmBackups> {
    let nodeId = '';
    const backups = await this.act(
      vmId,
      'backup',
      (listed) => {
        nodeId = listed.node.node_id;
        return this.vmHost.backUp(listed.node, vmId);
      },
      '',
    );
    return { ...backups, node_id: nodeId };
  }

  /** The VM's backups on its node, newest first. */
  async listBackups(vmId: string): Promise<FleetVmBackups> {
    let nodeId = '';
    const backups = await this.act(vmId, 'backups read', (listed) => {
      nodeId = listed.node.node_id;
      return this.vmHost.backups(listed.node, vmId);
    });
    return { ...backups, node_id: nodeId };
  }

  /**
   * Finds the VM's node in the store and asks that node's agent: a VM no live agent manages is
   * refused before anything is sent, and the agent's answer is judged into the controller's
   * own words (see refusalOf). `logged`: an action taken is logged, with these words on how.
   */
  private async act<T extends { vm_id: string }>(
    vmId: string,
    action: VmAction,
    send: (listed: ListedFleetVm) => Promise<AgentAnswer<T>>,
    logged?: string,
  ): Promise<T> {
    const listed = await this.vms.findWithNode(vmId);
    const nodeId = listed.node.node_id;
    if (listed.silent) {
      throw new VmNodeSilentError(vmId, nodeId, action, listed.vm.node_silent_since ?? '');
    }
    let answer: AgentAnswer<T>;
    try {
      answer = await send(listed);
    } catch (error) {
      if (!(error instanceof AgentCallError)) throw error;
      // The client's message may quote the agent: the operator gets fixed words, the log all.
      this.logger.warn(`vm ${vmId}: ${action} on node ${nodeId} failed: ${error.message}`);
      throw new VmAgentFailedError(vmId, nodeId, action, error.reason);
    }
    if (answer.kind === 'answered') {
      if (answer.value.vm_id === vmId) {
        if (logged !== undefined) {
          this.logger.log(`vm ${vmId} on node ${nodeId}: ${action} taken by its agent${logged}`);
          this.remember(nodeId, answer.value);
        }
        return answer.value;
      }
      this.logger.warn(`node ${nodeId}: ${action} of vm ${vmId} ${NOT_THIS_VM}`);
      throw new VmAgentFailedError(vmId, nodeId, action, 'failed');
    }
    throw this.refusalOf(vmId, nodeId, action, answer.status, answer.message);
  }

  /**
   * An action's outcome in the shared reads, so the pages show it at their next poll rather than
   * the life cycle from before it.
   */
  private remember(nodeId: string, answer: { vm_id: string }): void {
    this.vmReads.delete(`${nodeId}/${answer.vm_id}`);
    if ('state' in answer) {
      this.lifeCycles
        .latest()
        ?.get(nodeId)
        ?.set(answer.vm_id, answer as VmLifeCycle);
    }
  }

  /** The agent's refusal (404, 409, 422) as the controller's own error. */
  private refusalOf(
    vmId: string,
    nodeId: string,
    action: VmAction,
    status: 404 | 409 | 422,
    message: string | undefined,
  ): Error {
    if (status === 409) {
      return new VmActionConflictError(
        vmId,
        nodeId,
        describeAgentConflict(vmId, nodeId, action, agentConflictOf(vmId, message)),
      );
    }
    if (status === 404 && message === `vm ${vmId} is not on this node`) {
      return new VmNotOnItsNodeError(vmId, nodeId);
    }
    if (status === 422 && (action === 'start' || action === 'restart')) {
      return new VmStartNoRoomError(vmId, nodeId, message);
    }
    // A 404 in other words (an agent without these routes) or a 422 to a stop or a read.
    this.logger.warn(`vm ${vmId}: node ${nodeId} answered the ${action} ${status}`);
    return new VmAgentFailedError(vmId, nodeId, action, 'failed');
  }
}

/** How a stop or restart goes on, for the log line. */
function how({ force, timeout_s }: StopVmRequest): string {
  return force ? ' (forced)' : ` (ACPI, QEMU ended after ${timeout_s} s)`;
}

function withLifeCycle(
  vm: ListedFleetVm['vm'],
  lifeCycle: VmLifeCycle | undefined,
): FleetVmWithLifeCycle {
  return { ...vm, life_cycle: lifeCycle ?? null };
}
