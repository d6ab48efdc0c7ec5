import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  Matches,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsVmType, VM_TYPE_SCHEMA } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { MAX_HOST_PORTS_PER_VM } from '../fleet.constants';
import { MAX_VM_DISK_GB } from '../disk-capacity';
import { EXAMPLE_NODE_ID, EXAMPLE_TENANT_ID, EXAMPLE_VM_ID } from './examples';
import { MAX_VM_RAM_MB, MAX_VM_VCPUS } from './create-vm-request';
import { CopyPolicy } from './vm-copies';
import { MAX_BACKUPS_LISTED } from './vm-backup';
import { FleetVm } from './fleet-vm';
import { HostPort, VmRecord } from './vm-record';
import { RestorePull } from './replica-read';

/** `<chain_id>/<index>`: one file of a chain (the point in time it holds). */
export const RESTORE_POINT_ID = /^\d{8}T\d{6}Z-[0-9a-f]{4}\/\d{4}$/;
/** A backup id as a restore takes it: a point, or a chain alone (its newest file, or at `at`). */
export const RESTORE_BACKUP_ID = /^\d{8}T\d{6}Z-[0-9a-f]{4}(?:\/\d{4})?$/;
const RESTORE_BACKUP_ID_SCHEMA = {
  maxLength: 32,
  pattern: RESTORE_BACKUP_ID.source,
  example: '20261205T041700Z-3f2a/0003',
};

/** What a restore reads: the replica this node holds, or one of its VM_BACKUP_DIR's backups. */
export class RestoreSource {
  @ApiProperty({
    required: false,
    description:
      'true: the copy of the VM this node holds as a peer (VM_DISK_DIR/replicas/<vm_id>/), its newest complete file (or the newest taken at or before `at`). Exactly one of replica and backup_id.',
  })
  @IsOptional()
  @IsIn([true], { message: '$property must be true when given' })
  @IsBoolean()
  replica?: boolean;

  @ApiProperty({
    required: false,
    ...RESTORE_BACKUP_ID_SCHEMA,
    description:
      "A backup in this node's VM_BACKUP_DIR/<vm_id>/: `<chain_id>/<index>` (that file), or `<chain_id>` (its newest file, or the newest taken at or before `at`). Any VM's backups, on this node or not (a folder copied from a dead node).",
  })
  @IsOptional()
  @Matches(RESTORE_BACKUP_ID, { message: '$property must be <chain_id>/<index> or <chain_id>' })
  backup_id?: string;

  @ApiProperty({
    required: false,
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    description:
      'The newest file taken at or before this time; a backup_id naming a later file is refused.',
  })
  @IsOptional()
  @IsRfc3339()
  at?: string;

  @ApiProperty({
    required: false,
    example: EXAMPLE_VM_ID,
    ...ID_SCHEMA,
    description:
      'The VM whose copy or backup is read; absent: the vm_id restored (as_new gives another).',
  })
  @IsOptional()
  @IsFleetId()
  vm_id?: string;

  @ApiProperty({
    type: RestorePull,
    required: false,
    description:
      "With replica: the copy is held by another node: pulled from it (a read grant) into a private staging folder, checked, then made the VM's disk.",
  })
  @IsOptional()
  @ValidateNested()
  @IsObject()
  @Type(() => RestorePull)
  pull?: RestorePull;
}

/**
 * POST /v1/restores on an agent (the controller's operations listener sends it with the node's
 * token): make the VM `vm_id` on this node from a copy or backup, and start it.
 */
export class AgentRestoreRequest {
  @ApiProperty({
    example: EXAMPLE_VM_ID,
    ...ID_SCHEMA,
    description:
      'The VM made: kept from the copy (so its guest sees the same instance) unless restored as new.',
  })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ example: 'web', ...VM_TYPE_SCHEMA })
  @IsVmType()
  vm_type!: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_RAM_MB, example: 2048 })
  @Min(1)
  @Max(MAX_VM_RAM_MB)
  @IsInt()
  ram_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_VCPUS, example: 2 })
  @Min(1)
  @Max(MAX_VM_VCPUS)
  @IsInt()
  vcpu_count!: number;

  @ApiProperty({
    type: String,
    nullable: true,
    required: false,
    example: EXAMPLE_TENANT_ID,
    ...ID_SCHEMA,
  })
  @IsOptional()
  @IsFleetId()
  tenant_id?: string | null;

  @ApiProperty({
    type: [HostPort],
    minItems: 1,
    maxItems: MAX_HOST_PORTS_PER_VM,
    description:
      "The VM's forwards, SSH (guest 22/tcp) first (a 400 otherwise): each guest port published again, on the same host port where it is free on this node (and keep_host_ports; never one below 1024), else on a free one.",
  })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_HOST_PORTS_PER_VM)
  @IsArray()
  @Type(() => HostPort)
  ports!: HostPort[];

  @ApiProperty({
    description:
      'false: every port on a free host port of its own (a VM restored as new beside the original).',
  })
  @IsBoolean()
  keep_host_ports!: boolean;

  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 1,
    maximum: MAX_VM_DISK_GB,
    example: 20,
  })
  @IsOptional()
  @Min(1)
  @Max(MAX_VM_DISK_GB)
  @IsInt()
  disk_gb?: number;

  @ApiProperty({ type: CopyPolicy, required: false })
  @IsOptional()
  @ValidateNested()
  @IsObject()
  @Type(() => CopyPolicy)
  copies?: CopyPolicy;

  @ApiProperty({
    required: false,
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    description:
      "When the controller ordered the restore (its wall clock): a restore from this node's copy records it as the copy's restore moment (copy grants issued before it write nothing more); absent (an older controller): this node's clock.",
  })
  @IsOptional()
  @IsRfc3339()
  issued_at?: string;

  @ApiProperty({ type: RestoreSource })
  @ValidateNested()
  @IsObject()
  @Type(() => RestoreSource)
  source!: RestoreSource;
}

/** One point a VM can be restored to on a node: a file of a chain. */
export class RestorePoint {
  @ApiProperty({
    enum: ['replica', 'backup'],
    description:
      "replica: the copy this node holds as a peer; backup: in this node's VM_BACKUP_DIR.",
  })
  @IsIn(['replica', 'backup'])
  source!: 'replica' | 'backup';

  @ApiProperty({
    maxLength: 32,
    pattern: RESTORE_POINT_ID.source,
    example: '20261205T041700Z-3f2a/0003',
  })
  @Matches(RESTORE_POINT_ID)
  backup_id!: string;

  @ApiProperty({ enum: ['full', 'incremental'] })
  @IsIn(['full', 'incremental'])
  kind!: 'full' | 'incremental';

  @ApiProperty({ format: 'date-time', maxLength: RFC3339_MAX_LENGTH })
  @IsRfc3339()
  taken_at!: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: "This file's size on disk, in bytes." })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  size_bytes!: number;
}

const nullable = ValidateIf((_, value) => value !== null);

/** The VM as a chain's manifest describes it (its record when the chain's last file was taken). */
export class RestoreSpec {
  @ApiProperty({ example: 'web', ...VM_TYPE_SCHEMA })
  @IsVmType()
  vm_type!: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_RAM_MB })
  @Min(1)
  @Max(MAX_VM_RAM_MB)
  @IsInt()
  ram_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_VCPUS })
  @Min(1)
  @Max(MAX_VM_VCPUS)
  @IsInt()
  vcpu_count!: number;

  @ApiProperty({ type: String, nullable: true, ...ID_SCHEMA })
  @nullable
  @IsFleetId()
  tenant_id!: string | null;

  @ApiProperty({ type: [HostPort], maxItems: MAX_HOST_PORTS_PER_VM, description: 'SSH first.' })
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
}

/** GET /v1/restores/{vm_id}/points on an agent: where the VM can be restored from on that node. */
export class RestorePoints {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({
    type: [RestorePoint],
    maxItems: MAX_BACKUPS_LISTED,
    description: 'Newest first; [] when the node holds none.',
  })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_BACKUPS_LISTED)
  @IsArray()
  @Type(() => RestorePoint)
  points!: RestorePoint[];

  @ApiProperty({
    type: RestoreSpec,
    nullable: true,
    description:
      "The VM as the newest chain's manifest describes it; null when no chain can be read.",
  })
  @nullable
  @ValidateNested()
  @IsObject()
  @Type(() => RestoreSpec)
  spec!: RestoreSpec | null;
}

/** An agent's answer to POST /v1/restores: the VM made (Provisioning while it starts), and from what. */
export class AgentRestoredVm {
  @ApiProperty({ type: VmRecord })
  @ValidateNested()
  @IsObject()
  @Type(() => VmRecord)
  vm!: VmRecord;

  @ApiProperty({ type: RestorePoint })
  @ValidateNested()
  @IsObject()
  @Type(() => RestorePoint)
  point!: RestorePoint;
}

/** The operations listener's answer to POST /v1/vms/{vm_id}/restore. */
export class RestoredVm {
  @ApiProperty({ type: FleetVm, description: 'The VM as now listed, on its new node.' })
  @ValidateNested()
  @IsObject()
  @Type(() => FleetVm)
  vm!: FleetVm;

  @ApiProperty({ type: RestorePoint, description: 'What it was restored from, on that node.' })
  @ValidateNested()
  @IsObject()
  @Type(() => RestorePoint)
  point!: RestorePoint;

  @ApiProperty({
    type: String,
    nullable: true,
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description:
      'The node the VM was last listed on, which will not run it again (its agent sets it aside when it comes back); null when restored as new or never listed.',
  })
  @nullable
  @IsFleetId()
  replaced_node_id!: string | null;
}
