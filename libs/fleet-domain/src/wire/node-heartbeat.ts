import { ApiProperty } from '@app/api-basics';
import { Transform, Type } from 'class-transformer';
import { HeartbeatReplica, MAX_REPLICAS_REPORTED, MAX_VM_COPIES } from './vm-copies';
import {
  ArrayMaxSize,
  IsArray,
  Matches,
  IsBoolean,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import {
  MAX_DISK_OVERCOMMIT,
  MAX_HOST_CPU_CORES,
  MAX_HOST_DISK_MB,
  MAX_HOST_RAM_MB,
  MAX_HOSTNAME_LENGTH,
  MAX_VMS_PER_HEARTBEAT,
  DEFAULT_SPAWN_PORT,
} from '../fleet.constants';
import { MAX_FENCE_AFTER_S, MAX_FENCED_VMS_REPORTED, MIN_FENCE_AFTER_S } from '../fencing';
import {
  ID_PATTERN,
  ID_RULE,
  ID_SCHEMA,
  IP_LITERAL_MAX_LENGTH,
  IP_LITERAL_PATTERN,
  IsFleetId,
  IsIpAddressLiteral,
  IsPrintableText,
  NO_CONTROL_CHARACTERS_PATTERN,
} from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_NODE_ID, EXAMPLE_WG_IP } from './examples';
import { HeartbeatVm } from './heartbeat-vm';
import { MAX_MESH_ROUTES, MeshRoute } from './mesh-route';

/** One disk-room figure in MB (MiB): an integer, bounded. */
function DiskMb(description: string, example: number): PropertyDecorator {
  return (target, key) => {
    ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_HOST_DISK_MB, example, description })(
      target,
      key,
    );
    Max(MAX_HOST_DISK_MB)(target, key);
    Min(0)(target, key);
    IsInt()(target, key);
  };
}

/**
 * VM_DISK_DIR's room for VM disks as the agent judges creates against it (docs/vms.md "Disk
 * room"). Shown only (console, ppn-fleet status); placement does not read it.
 */
export class HeartbeatDiskRoom {
  @DiskMb(
    'Room for VM disks: available now, plus what VM disks hold already, less the reserve.',
    40960,
  )
  room_mb!: number;

  @DiskMb("Every VM disk's virtual size together.", 28672)
  committed_mb!: number;

  @DiskMb(
    'What one more disk may still have at its virtual size: room_mb x overcommit - committed_mb.',
    12288,
  )
  committable_mb!: number;

  @DiskMb('Kept free beyond every disk: 5% of the file system, at most 2 GiB.', 2048)
  reserve_mb!: number;

  @ApiProperty({
    type: Number,
    minimum: 1,
    maximum: MAX_DISK_OVERCOMMIT,
    example: 1,
    description: 'VM_DISK_OVERCOMMIT: virtual sizes may add up to room_mb times this.',
  })
  @Max(MAX_DISK_OVERCOMMIT)
  @Min(1)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  overcommit!: number;
}

/** What every agent POSTs to /v1/nodes/heartbeat. Unknown extra fields are ignored. */
export class NodeHeartbeat {
  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({
    example: EXAMPLE_WG_IP,
    description:
      "The node's WireGuard IP address: an IPv4 or IPv6 address literal (no zone, port or prefix). The controller calls the agent at this address only.",
    pattern: IP_LITERAL_PATTERN,
    maxLength: IP_LITERAL_MAX_LENGTH,
  })
  @IsIpAddressLiteral()
  wg_ip!: string;

  @ApiProperty({
    example: EXAMPLE_NODE_ID,
    description: 'Any text without control or format characters (Unicode Cc, Cf, Zl, Zp).',
    minLength: 1,
    maxLength: MAX_HOSTNAME_LENGTH,
    pattern: NO_CONTROL_CHARACTERS_PATTERN,
  })
  @IsPrintableText(MAX_HOSTNAME_LENGTH)
  hostname!: string;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_HOST_RAM_MB, example: 32768 })
  @Max(MAX_HOST_RAM_MB)
  @Min(0)
  @IsInt()
  ram_total_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_HOST_RAM_MB, example: 8192 })
  @Max(MAX_HOST_RAM_MB)
  @Min(0)
  @IsInt()
  ram_used_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_HOST_CPU_CORES, example: 8 })
  @Max(MAX_HOST_CPU_CORES)
  @Min(1)
  @IsInt()
  cpu_cores!: number;

  @ApiProperty({ type: Number, minimum: 0, maximum: 100, example: 12.5 })
  @Max(100)
  @Min(0)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  cpu_load_pct!: number;

  @ApiProperty({ example: true })
  @IsBoolean()
  kvm_available!: boolean;

  @ApiProperty({
    required: false,
    default: false,
    description: 'Last-resort-only for placement.',
  })
  @Transform(({ value }: { value: unknown }) => value ?? false)
  @IsBoolean()
  reserved: boolean = false;

  @ApiProperty({ type: [HeartbeatVm], maxItems: MAX_VMS_PER_HEARTBEAT })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_VMS_PER_HEARTBEAT)
  @IsArray()
  @Type(() => HeartbeatVm)
  vms!: HeartbeatVm[];

  @ApiProperty({ example: '4f0b6a8e-3c1d-4c53-9a53-2f5d2f0e9d10', ...ID_SCHEMA })
  @IsFleetId()
  boot_id!: string;

  @ApiProperty({
    type: String,
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    example: '2026-08-06T12:00:00.123456789Z',
  })
  @IsRfc3339()
  timestamp_utc!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: 65535,
    required: false,
    example: DEFAULT_SPAWN_PORT,
    description: "Port of the agent's local API; absent means 9204.",
  })
  @IsOptional()
  @Max(65535)
  @Min(1)
  @IsInt()
  spawn_port?: number;

  @ApiProperty({
    type: HeartbeatDiskRoom,
    required: false,
    description:
      "VM_DISK_DIR's disk room; absent from older agents, and when the agent cannot read it.",
  })
  @IsOptional()
  @ValidateNested()
  @IsObject()
  @Type(() => HeartbeatDiskRoom)
  disk_room?: HeartbeatDiskRoom;

  @ApiProperty({
    type: [HeartbeatReplica],
    required: false,
    maxItems: MAX_REPLICAS_REPORTED,
    description:
      "The copies of other nodes' VMs this node holds (complete and checked). Absent from older agents.",
  })
  @IsOptional()
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_REPLICAS_REPORTED)
  @IsArray()
  @Type(() => HeartbeatReplica)
  replicas?: HeartbeatReplica[];

  @ApiProperty({
    type: 'array',
    items: { type: 'string', ...ID_SCHEMA },
    required: false,
    maxItems: MAX_FENCED_VMS_REPORTED,
    description:
      'etcd mode only: the protected VMs this agent ended because its lease ran out (fence_after_s passed without a renewal), still fenced (not started again). Absent: none.',
  })
  @IsOptional()
  @Matches(ID_PATTERN, { each: true, message: `each value in $property must be ${ID_RULE}` })
  @ArrayMaxSize(MAX_FENCED_VMS_REPORTED)
  @IsArray()
  fenced_vm_ids?: string[];
}

/**
 * The controller's answer to a heartbeat: whether it was taken. An agent that reads no body
 * (any agent of the original services) loses nothing; ours warns when it was not taken.
 */
export class HeartbeatAnswer {
  @ApiProperty({
    example: true,
    description:
      "false: ignored as a late copy, because the node's record holds a heartbeat of the same boot stamped later (stored_timestamp_utc) that arrived less than 5 s before; nothing was changed.",
  })
  accepted!: boolean;

  @ApiProperty({
    type: String,
    format: 'date-time',
    required: false,
    example: '2026-08-06T12:00:10.123456789Z',
    description:
      'Only when not accepted: the stamp stored for this boot. A heartbeat stamped after it is taken.',
  })
  stored_timestamp_utc?: string;

  @ApiProperty({
    type: [String],
    required: false,
    description:
      'VMs this node lists that were restored on another node since: the agent stops them if they run, sets their disks aside and lists them no more. Absent: none.',
  })
  superseded_vm_ids?: string[];

  @ApiProperty({
    type: 'integer',
    minimum: MIN_FENCE_AFTER_S,
    maximum: MAX_FENCE_AFTER_S,
    required: false,
    example: 45,
    description:
      "etcd mode only, present only when the controller renewed this node's lease in etcd before answering: the node may keep its protected VMs (copies count >= 1) running until fence_after_s seconds after it sent this heartbeat, by its monotonic clock. Absent: no fencing (memory or Redis mode), or the renewal failed.",
  })
  @IsOptional()
  @Max(MAX_FENCE_AFTER_S)
  @Min(MIN_FENCE_AFTER_S)
  @IsInt()
  fence_after_s?: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: MAX_VM_COPIES,
    required: false,
    example: 1,
    description:
      "etcd mode only, present exactly when fence_after_s is: the controller's default copy count (VM_FLEET_COPIES), which a VM whose copies policy is absent has. The protected VMs the agent fences are those whose copies count (this default when absent) is at least 1: exactly those a recovery restores elsewhere. Absent (a controller before it): a VM without a policy counts as protected.",
  })
  @IsOptional()
  @Max(MAX_VM_COPIES)
  @Min(0)
  @IsInt()
  copies_default?: number;

  @ApiProperty({
    type: [String],
    required: false,
    maxItems: MAX_REPLICAS_REPORTED,
    description:
      "Only when the heartbeat reported replicas: those of VMs the fleet still has (some node's record lists it, live or silent). A copy this node holds of a VM no answer has listed for 24 h is removed by its agent (docs/vms.md). Absent: a controller before it; nothing is removed.",
  })
  wanted_replica_vm_ids?: string[];

  @ApiProperty({
    type: [MeshRoute],
    required: false,
    maxItems: MAX_MESH_ROUTES,
    description:
      'The routing mesh\'s table: the published ports of the VMs other live nodes run (docs/vms.md "Reaching a service"); this node listens on each TCP one at its own address and forwards to the node named. Absent: none (an agent closes every listener of its mesh), or a controller before it.',
  })
  mesh_routes?: MeshRoute[];
}
