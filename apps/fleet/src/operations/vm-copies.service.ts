import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { MAX_COPIES_LISTED, VmBackups, VmCopies } from '@app/fleet-domain';
import { NodeLeases } from '../nodes/node-leases';
import { VmHostClient } from '../vms/vm-host.client';
import { AgentCallError } from '../vms/agent-calls';
import { VmsService } from '../vms/vms.service';
import { SharedRead } from './shared-read';
import { LISTING_BUSY_FACTOR, LISTING_MIN_INTERVAL_MS } from './vm-operations.service';

/** The most VMs whose shared read is kept; past it they are all let go. */
const MAX_SHARED_READS = 1_000;

/**
 * What protects a VM, for GET /v1/vms/{vm_id}/copies: its policy and the copies other nodes hold,
 * from the store (one read), and its backups, asked of its node's agent. An agent that cannot
 * say leaves the backups out with the controller's own reason; the copies are shown all the same.
 */
@Injectable()
export class VmCopiesService {
  private readonly logger = new Logger('VmCopies');
  private readonly reads = new Map<string, SharedRead<VmCopies>>();

  constructor(
    private readonly vms: VmsService,
    private readonly vmHost: VmHostClient,
    private readonly clock: Clock,
    /** etcd mode: the VM's generation, raised by each recovery. */
    private readonly leases?: NodeLeases,
  ) {}

  /**
   * copiesOf, shared by every reader of the VM (the console's pages refresh it every 2 s): its
   * agent is asked at most once per LISTING_MIN_INTERVAL_MS, however many tabs are open.
   */
  shared(vmId: string): Promise<VmCopies> {
    let read = this.reads.get(vmId);
    if (read === undefined) {
      if (this.reads.size >= MAX_SHARED_READS) this.reads.clear();
      read = new SharedRead(this.clock, LISTING_MIN_INTERVAL_MS, LISTING_BUSY_FACTOR, () =>
        this.copiesOf(vmId),
      );
      this.reads.set(vmId, read);
    }
    return read.get();
  }

  async copiesOf(vmId: string): Promise<VmCopies> {
    const { vm, node, silent, policy, copies } = await this.vms.findWithCopies(vmId);
    const nodeId = node.node_id;
    let backups: VmBackups | null = null;
    let unread: string | null = null;
    if (silent) {
      unread = `node ${nodeId} is silent since ${vm.node_silent_since ?? '?'}: no agent to ask`;
    } else {
      try {
        const answer = await this.vmHost.backups(node, vmId);
        if (answer.kind === 'answered' && answer.value.vm_id === vmId) backups = answer.value;
        else if (answer.kind === 'refused' && answer.status === 404) {
          unread = `the agent of node ${nodeId} does not know the vm`;
        } else {
          this.logger.warn(`vm ${vmId}: node ${nodeId} answered the backups read unusably`);
          unread = `the agent of node ${nodeId} answered the backups read unusably`;
        }
      } catch (error) {
        if (!(error instanceof AgentCallError)) throw error;
        // The client's message may quote the agent: the operator gets fixed words, the log all.
        this.logger.warn(`vm ${vmId}: backups read on node ${nodeId} failed: ${error.message}`);
        unread =
          error.reason === 'unreachable'
            ? `the agent of node ${nodeId} could not be reached`
            : `the agent of node ${nodeId} answered the backups read unusably`;
      }
    }
    const generation = (await this.leases?.generationsOf([vmId]))?.get(vmId);
    return {
      vm_id: vmId,
      node_id: nodeId,
      ...(generation !== undefined && { generation }),
      policy,
      copied_at: vm.copied_at ?? null,
      copy_node_id: vm.copy_node_id ?? null,
      copies: copies.slice(0, MAX_COPIES_LISTED).map((copy) => ({
        vm_id: copy.vm_id,
        source_node_id: copy.source_node_id,
        copied_at: copy.copied_at,
        size_bytes: copy.size_bytes,
        node_id: copy.node_id,
      })),
      backups,
      backups_unread: unread,
    };
  }
}
