import createClient, { Client } from 'openapi-fetch';
import { FleetOpsApi } from '@app/fleet-domain';
import * as Wire from '@app/fleet-domain';
import { listOf, shapeOf } from './answer-check';
import type {
  DeclaredDeadNode,
  FleetVmBackups,
  FleetVmWithLifeCycle,
  MovedVm,
  MoveVmRequest,
  NodeDiskRoom,
  NodeDrain,
  RestoredVm,
  RestoreVmRequest,
  StopVmRequest,
  VmConsole,
  VmCopies,
  VmLifeCycle,
} from './answers';
import { Answer, AnswerReader, clientOptions, timeout } from './fleet-api.client';

export type {
  DeclaredDeadNode,
  FleetVmBackups,
  FleetVmWithLifeCycle,
  MovedVm,
  MoveVmRequest,
  NodeDiskRoom,
  NodeDrain,
  RestoredVm,
  RestoreVmRequest,
  StopVmRequest,
  VmConsole,
  VmCopies,
  VmLifeCycle,
} from './answers';

/** A move's answer waits for a whole disk and the memory sent: the controller's 2 h, and more. */
export const MOVE_TIMEOUT_MS = 121 * 60_000;

/** A drain's answer waits for each of the node's VMs moved, two at a time: a day at most. */
export const DRAIN_TIMEOUT_MS = 24 * 60 * 60_000;

/** A restore's answer waits for a whole disk to be converted: the controller's 30 min, and more. */
export const RESTORE_TIMEOUT_MS = 31 * 60_000;

/**
 * The controller's operations listener, typed from openapi/fleet-ops.openapi.json
 * (FleetOpsApi): VMs with their life cycles, stop, start, restart, the serial console and backups.
 */
export class FleetOpsApiClient {
  private readonly client: Client<FleetOpsApi.paths>;
  private readonly reader: AnswerReader;

  constructor(
    readonly endpoint: string,
    apiToken: string | undefined,
    fetchImplementation: typeof fetch,
  ) {
    this.client = createClient<FleetOpsApi.paths>(
      clientOptions(endpoint, apiToken, fetchImplementation),
    );
    this.reader = new AnswerReader(endpoint, "the controller's operations listener", true);
  }

  vms(tenantId?: string): Promise<Answer<FleetVmWithLifeCycle[]>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/vms', {
          params: { query: tenantId === undefined ? {} : { tenant_id: tenantId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      listOf(Wire.FleetVmWithLifeCycle),
    );
  }

  vm(vmId: string): Promise<Answer<FleetVmWithLifeCycle>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/vms/{vm_id}', {
          params: { path: { vm_id: vmId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.FleetVmWithLifeCycle),
    );
  }

  stop(vmId: string, body: StopVmRequest): Promise<Answer<VmLifeCycle>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/vms/{vm_id}/stop', {
          params: { path: { vm_id: vmId } },
          body,
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.VmLifeCycle),
    );
  }

  start(vmId: string): Promise<Answer<VmLifeCycle>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/vms/{vm_id}/start', {
          params: { path: { vm_id: vmId } },
          // No body, yet the listener takes a write only with this (or a token): no cross-site
          // form or no-CORS fetch can send it.
          headers: { 'Content-Type': 'application/json' },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.VmLifeCycle),
    );
  }

  restart(vmId: string, body: StopVmRequest): Promise<Answer<VmLifeCycle>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/vms/{vm_id}/restart', {
          params: { path: { vm_id: vmId } },
          body,
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.VmLifeCycle),
    );
  }

  /** `from`: where the last read ended (its `next`); absent, the last part of the console. */
  console(vmId: string, from?: number): Promise<Answer<VmConsole>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/vms/{vm_id}/console', {
          params: { path: { vm_id: vmId }, query: from === undefined ? {} : { from } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.VmConsole),
    );
  }

  /** A backup to the VM's node's VM_BACKUP_DIR, begun. */
  backUp(vmId: string): Promise<Answer<FleetVmBackups>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/vms/{vm_id}/backups', {
          params: { path: { vm_id: vmId } },
          // No body: as for start, the listener takes a write only with this (or a token).
          headers: { 'Content-Type': 'application/json' },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.FleetVmBackups),
    );
  }

  backups(vmId: string): Promise<Answer<FleetVmBackups>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/vms/{vm_id}/backups', {
          params: { path: { vm_id: vmId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.FleetVmBackups),
    );
  }

  /** What protects the VM: its copy policy, its copies on other nodes, its backups. */
  copies(vmId: string): Promise<Answer<VmCopies>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/vms/{vm_id}/copies', {
          params: { path: { vm_id: vmId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.VmCopies),
    );
  }

  /**
   * The VM restored from a copy or backup; answered once its new node made it (a whole disk
   * converted), so waited for as long as the controller waits for that node.
   */
  restore(vmId: string, request: RestoreVmRequest): Promise<Answer<RestoredVm>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/vms/{vm_id}/restore', {
          params: { path: { vm_id: vmId } },
          body: request,
          parseAs: 'text',
          signal: AbortSignal.timeout(RESTORE_TIMEOUT_MS),
        }),
      shapeOf(Wire.RestoredVm),
    );
  }

  /** The VM moved to another node; answered once it is there (its disk and memory sent). */
  move(vmId: string, request: MoveVmRequest): Promise<Answer<MovedVm>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/vms/{vm_id}/move', {
          params: { path: { vm_id: vmId } },
          body: request,
          parseAs: 'text',
          signal: AbortSignal.timeout(MOVE_TIMEOUT_MS),
        }),
      shapeOf(Wire.MovedVm),
    );
  }

  /** Marks a node whose lease lapsed for recovery now (etcd mode; 409 while its lease is live). */
  declareNodeDead(nodeId: string): Promise<Answer<DeclaredDeadNode>> {
    return this.reader.call(
      () =>
        this.client.POST('/v1/nodes/{node_id}/declare-dead', {
          params: { path: { node_id: nodeId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.DeclaredDeadNode),
    );
  }

  /** The node drained, its VMs moved off it; answered once each was tried. */
  drainNode(nodeId: string): Promise<Answer<NodeDrain>> {
    return this.drainCall('/v1/nodes/{node_id}/drain', nodeId, DRAIN_TIMEOUT_MS);
  }

  /** The node's drain ended: placement may choose it again. */
  undrainNode(nodeId: string): Promise<Answer<NodeDrain>> {
    return this.drainCall('/v1/nodes/{node_id}/undrain', nodeId);
  }

  /** The node's drain as it stands: drained or not, each VM's outcome so far. */
  nodeDrain(nodeId: string): Promise<Answer<NodeDrain>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/nodes/{node_id}/drain', {
          params: { path: { node_id: nodeId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.NodeDrain),
    );
  }

  private drainCall(
    path: '/v1/nodes/{node_id}/drain' | '/v1/nodes/{node_id}/undrain',
    nodeId: string,
    timeoutMs?: number,
  ): Promise<Answer<NodeDrain>> {
    return this.reader.call(
      () =>
        this.client.POST(path, {
          params: { path: { node_id: nodeId } },
          // No body: as for start, the listener takes a write only with this (or a token).
          headers: { 'Content-Type': 'application/json' },
          parseAs: 'text',
          signal: timeoutMs === undefined ? timeout() : AbortSignal.timeout(timeoutMs),
        }),
      shapeOf(Wire.NodeDrain),
    );
  }

  /** The live nodes' disk room, as their heartbeats reported it. */
  nodeDisks(): Promise<Answer<NodeDiskRoom[]>> {
    return this.reader.call(
      () => this.client.GET('/v1/node-disks', { parseAs: 'text', signal: timeout() }),
      listOf(Wire.NodeDiskRoom),
    );
  }
}
