import { ApiProperty } from '@app/api-basics';
import { IsOptional, IsString } from 'class-validator';
import { ID_SCHEMA, IsFleetId } from '../ids';
import { EXAMPLE_NODE_ID } from './examples';
import { VmRecord } from './vm-record';

/**
 * A VM as the controller shows it (GET /v1/vms, POST /v1/vms): the VmRecord its agent reports,
 * and the node it runs on. Only the controller knows the node, so agents' answers and
 * heartbeats stay plain VmRecords and the field is added here alone.
 */
export class FleetVm extends VmRecord {
  @ApiProperty({
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description:
      "The node whose agent runs the VM. Its forwarded ports (host_ports) are reached at that node's wg_ip (GET /v1/nodes/{node_id}): ssh -p <host_port> <user>@<wg_ip>.",
  })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({
    required: false,
    type: 'string',
    format: 'date-time',
    example: '2026-08-06T12:00:00.000Z',
    description:
      'Only when no live agent manages the VM: its node has dropped out (silent for more than 30 s), or its node id heartbeats again from an agent that does not list it (another machine with the same node id: a cloned VM_NODE_ID, or the agent started on another VM_DISK_DIR). The last heartbeat that listed it (RFC 3339): the VM is as that heartbeat reported it, its agent is stopped or cut off, and its QEMU may still run. It stays listed with this field until an agent heartbeating with its node id lists it again; DELETE answers 409 meanwhile, or forgets the record with ?forget=true.',
  })
  @IsOptional()
  @IsString()
  node_silent_since?: string;

  @ApiProperty({
    required: false,
    type: 'string',
    format: 'date-time',
    nullable: true,
    description:
      "When the VM's freshest copy on another node was taken (RFC 3339); null while it has none. Absent when the controller does not track copies.",
  })
  @IsOptional()
  @IsString()
  copied_at?: string | null;

  @ApiProperty({
    required: false,
    type: 'string',
    nullable: true,
    ...ID_SCHEMA,
    description: 'The node holding that copy; null while there is none.',
  })
  @IsOptional()
  @IsString()
  copy_node_id?: string | null;
}

/** The VmRecord fields of `vm` alone, never what the controller keeps beside (the spawn key). */
export function vmRecordOf(vm: VmRecord): VmRecord {
  const record: VmRecord = {
    vm_id: vm.vm_id,
    vm_type: vm.vm_type,
    state: vm.state,
    ram_alloc_mb: vm.ram_alloc_mb,
    vcpu_count: vm.vcpu_count,
    started_at: vm.started_at,
    tenant_id: vm.tenant_id ?? null,
    host_ports: vm.host_ports.map(({ host_port, guest_port, protocol }) => ({
      host_port,
      guest_port,
      protocol,
    })),
    // As the agent reported it; null from agents that do not report it.
    accel: vm.accel ?? null,
  };
  return record;
}

/**
 * The VM an answer shows: its VmRecord fields and the node it runs on, and, for a VM no live
 * agent manages (node_silent_since), when it was last heard of (RFC 3339); `copy`: its freshest
 * copy on another node (copyFieldsOf), left out for a VM whose copies are not tracked.
 */
export function shownVm(
  vm: VmRecord,
  nodeId: string,
  nodeSilentSince?: string,
  copy?: { copied_at: string | null; copy_node_id: string | null },
): FleetVm {
  const shown: FleetVm = { ...vmRecordOf(vm), node_id: nodeId };
  if (nodeSilentSince !== undefined) shown.node_silent_since = nodeSilentSince;
  if (copy !== undefined) {
    shown.copied_at = copy.copied_at;
    shown.copy_node_id = copy.copy_node_id;
  }
  return shown;
}
