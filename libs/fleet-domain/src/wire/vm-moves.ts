import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsEnum,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsVmType, VM_TYPE_SCHEMA } from '../ids';
import { MAX_HOST_PORTS_PER_VM } from '../fleet.constants';
import { MAX_VM_DISK_GB } from '../disk-capacity';
import { EXAMPLE_NODE_ID, EXAMPLE_TENANT_ID } from './examples';
import { MAX_VM_RAM_MB, MAX_VM_VCPUS } from './create-vm-request';
import { CopyPeer, CopyPolicy, PEER_ADDRESS_PATTERN } from './vm-copies';
import { FleetVm } from './fleet-vm';
import { DesiredVmState } from './vm-life-cycle';
import { HostPort, VmRecord } from './vm-record';

/** How a VM moves: live (running, its disk mirrored then its memory migrated) or cold (stopped). */
export const MOVE_MODES = ['live', 'cold'] as const;
export type MoveMode = (typeof MOVE_MODES)[number];

/** A QEMU machine type as `qom-get /machine type` names it, less `-machine` (`pc-q35-7.2`). */
export const MACHINE_TYPE_PATTERN = /^[a-z][a-z0-9.-]{0,39}$/;
/** A QEMU CPU model with its flags (`qemu64`, `host,-arch-capabilities`). */
export const CPU_MODEL_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.,+=-]{0,63}$/;
/** The largest disk a move sends, in bytes (MAX_VM_DISK_GB GiB). */
const MAX_MOVE_DISK_BYTES = MAX_VM_DISK_GB * 1024 ** 3;

/** POST /v1/vms/{vm_id}/move on the operations listener. */
export class MoveVmRequest {
  @ApiProperty({
    required: false,
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description:
      'The node the VM moves to; absent: placement chooses among the live nodes other than its own (refusing with its reasons when none fits).',
  })
  @IsOptional()
  @IsFleetId()
  to?: string;
}

/** The answer of a move: the VM on its new node, and what the move took. */
export class MovedVm {
  @ApiProperty({ type: FleetVm })
  @ValidateNested()
  @IsObject()
  @Type(() => FleetVm)
  vm!: FleetVm;

  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA, description: 'The node it left.' })
  @IsString()
  from_node_id!: string;

  @ApiProperty({ enum: MOVE_MODES, example: 'live' })
  @IsIn(MOVE_MODES)
  mode!: MoveMode;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: 0,
    example: 420,
    description:
      "Live: how long the guest was paused at the switchover, in ms, as its old node measured it (from the migration's pause to the new node running it). Null for a cold move.",
  })
  @ValidateIf((_, value) => value !== null)
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  pause_ms!: number | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'The whole move, in ms.' })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  total_ms!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: "Bytes sent between the agents: the disk's and (live) the memory's.",
  })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  bytes_sent!: number;
}

/**
 * POST /v1/vms/{vm_id}/move-out on the VM's agent (the controller, with the node's token): move
 * the VM to `to`, whose grant lets this node hand it over there.
 */
export class AgentMoveOutRequest {
  @ApiProperty({
    type: CopyPeer,
    description: "The node it goes to: its agent, and the controller's grant for it.",
  })
  @ValidateNested()
  @IsObject()
  @Type(() => CopyPeer)
  to!: CopyPeer;
}

/** The old node's answer once the new one runs the VM (or holds it, stopped). */
export class AgentMovedOut {
  @ApiProperty({ type: VmRecord, description: 'The VM as its new node answered it.' })
  @ValidateNested()
  @IsObject()
  @Type(() => VmRecord)
  vm!: VmRecord;

  @ApiProperty({ enum: MOVE_MODES })
  @IsIn(MOVE_MODES)
  mode!: MoveMode;

  @ApiProperty({ type: 'integer', nullable: true, minimum: 0 })
  @IsOptional()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  @IsInt()
  pause_ms!: number | null;

  @ApiProperty({ type: 'integer', minimum: 0 })
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  @IsInt()
  total_ms!: number;

  @ApiProperty({ type: 'integer', minimum: 0 })
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  @IsInt()
  bytes_sent!: number;
}

/**
 * POST /v1/moves/{vm_id}/incoming on the node a VM moves to, from the node it leaves, with the
 * controller's move grant: make room for the VM (its disk blank, of its size) and wait for it.
 */
export class IncomingMoveRequest {
  @ApiProperty({ enum: MOVE_MODES })
  @IsIn(MOVE_MODES)
  mode!: MoveMode;

  @ApiProperty({ example: 'web', ...VM_TYPE_SCHEMA })
  @IsVmType()
  vm_type!: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_RAM_MB, example: 512 })
  @Min(1)
  @Max(MAX_VM_RAM_MB)
  @IsInt()
  ram_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_VCPUS, example: 1 })
  @Min(1)
  @Max(MAX_VM_VCPUS)
  @IsInt()
  vcpu_count!: number;

  @ApiProperty({ type: String, nullable: true, example: EXAMPLE_TENANT_ID, ...ID_SCHEMA })
  @IsOptional()
  @IsFleetId()
  tenant_id!: string | null;

  @ApiProperty({
    type: [HostPort],
    minItems: 1,
    maxItems: MAX_HOST_PORTS_PER_VM,
    description: 'Its forwards, SSH first: each on the same host port where free there.',
  })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_HOST_PORTS_PER_VM)
  @IsArray()
  @Type(() => HostPort)
  ports!: HostPort[];

  @ApiProperty({ type: 'integer', required: false, minimum: 1, maximum: MAX_VM_DISK_GB })
  @IsOptional()
  @Min(1)
  @Max(MAX_VM_DISK_GB)
  @IsInt()
  disk_gb?: number;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: MAX_MOVE_DISK_BYTES,
    description: "The disk's virtual size in bytes: the blank disk made to receive it.",
  })
  @Min(1)
  @Max(MAX_MOVE_DISK_BYTES)
  @IsInt()
  disk_bytes!: number;

  @ApiProperty({ type: CopyPolicy, required: false })
  @IsOptional()
  @ValidateNested()
  @IsObject()
  @Type(() => CopyPolicy)
  copies?: CopyPolicy;

  @ApiProperty({ enum: DesiredVmState, enumName: 'DesiredVmState' })
  @IsEnum(DesiredVmState)
  desired_state!: DesiredVmState;

  @ApiProperty({
    maxLength: 40,
    pattern: MACHINE_TYPE_PATTERN.source,
    example: 'pc-q35-7.2',
    description: 'Live: the machine type the VM runs on; the new node runs it on the same.',
  })
  @Matches(MACHINE_TYPE_PATTERN)
  @MaxLength(40)
  machine!: string;

  @ApiProperty({ enum: ['kvm', 'tcg'] })
  @IsIn(['kvm', 'tcg'])
  accel!: 'kvm' | 'tcg';

  @ApiProperty({
    maxLength: 64,
    pattern: CPU_MODEL_PATTERN.source,
    example: 'qemu64',
    description: 'Live: the CPU model it runs with (`-cpu`); the new node runs the same.',
  })
  @Matches(CPU_MODEL_PATTERN)
  @MaxLength(64)
  cpu!: string;

  @ApiProperty({
    required: false,
    maxLength: 128,
    description:
      "Live under KVM with a `host` CPU model: the old node's CPU (/proc/cpuinfo's model name), which the new node's must equal.",
  })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  host_cpu?: string;
}

/** Where the node a VM moves to waits for it. */
export class IncomingMove {
  @ApiProperty({
    example: '192.0.2.11:40123',
    maxLength: 64,
    description: "Its NBD server, exporting the VM's blank disk (export `ppn-move`).",
  })
  @Matches(PEER_ADDRESS_PATTERN)
  @MaxLength(64)
  nbd_address!: string;

  @ApiProperty({
    required: false,
    example: '192.0.2.11:40124',
    maxLength: 64,
    description: "Live: where its QEMU takes the VM's migration.",
  })
  @IsOptional()
  @Matches(PEER_ADDRESS_PATTERN)
  @MaxLength(64)
  migrate_address?: string;
}
