import { ApiProperty } from '@app/api-basics';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsObject,
  IsOptional,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsVmType, VM_TYPE_SCHEMA } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_TENANT_ID, EXAMPLE_VM_ID } from './examples';
import { MAX_PUBLISHED_PORTS, PublishedPortRequest } from './published-port';
import { MAX_VM_DISK_GB } from '../disk-capacity';
import { CopyPolicy } from './vm-copies';

/** Largest VM either daemon accepts: 1 TiB of RAM, 256 vCPUs. */
export const MAX_VM_RAM_MB = 1024 * 1024;
export const MAX_VM_VCPUS = 256;

export class CreateVmRequest {
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
    required: false,
    default: false,
    description:
      'Placement only: a node whose heartbeat says kvm_available is chosen first. Every node runs its VMs under KVM where it can, prefer_kvm or not (the VM record says which: accel).',
  })
  @Transform(({ value }: { value: unknown }) => value ?? false)
  @IsBoolean()
  prefer_kvm: boolean = false;

  @ApiProperty({ type: String, nullable: true, required: false, example: null, ...ID_SCHEMA })
  @IsOptional()
  @IsFleetId()
  preferred_node?: string | null;

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
    type: [PublishedPortRequest],
    required: false,
    maxItems: MAX_PUBLISHED_PORTS,
    description:
      "Guest ports to publish on the node's mesh address (VM_WG_IP) beside SSH, which is always there and first in host_ports. Absent: SSH only.",
  })
  @IsOptional()
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_PUBLISHED_PORTS)
  @IsArray()
  @Type(() => PublishedPortRequest)
  ports?: PublishedPortRequest[];

  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 1,
    maximum: MAX_VM_DISK_GB,
    example: 20,
    description:
      "The VM's disk in GiB (its virtual size), at least the base image's. Absent: the base image's size. Counted whole against the node's disk room (see docs/vms.md).",
  })
  @IsOptional()
  @Min(1)
  @Max(MAX_VM_DISK_GB)
  @IsInt()
  disk_gb?: number;

  @ApiProperty({
    type: CopyPolicy,
    required: false,
    description:
      'Copies of the VM\'s disk on other nodes (see docs/vms.md "Copies, backups and restore"). Absent: the controller\'s defaults (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S).',
  })
  @IsOptional()
  @ValidateNested()
  @IsObject()
  @Type(() => CopyPolicy)
  copies?: CopyPolicy;
}

/**
 * What the controller sends an agent's POST /v1/spawn: the client's request and the `vm_id`
 * the controller minted for the VM (additive; an agent of the original services ignores it and
 * mints its own, whose reply the controller then refuses, see docs/api.md "VM ids belong to their node").
 */
export class SpawnVmRequest extends CreateVmRequest {
  @ApiProperty({
    type: String,
    required: false,
    example: EXAMPLE_VM_ID,
    description:
      'The id the controller minted for the VM; the agent makes the VM under this id (absent: it mints one).',
    ...ID_SCHEMA,
  })
  @IsOptional()
  @IsFleetId()
  vm_id?: string;

  @ApiProperty({
    type: String,
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    required: false,
    example: '2026-08-06T12:00:10.000Z',
    description:
      'When the controller stops waiting for this spawn (its clock): an agent whose clock is past it refuses the spawn (409) and makes nothing, so a spawn delivered late (the agent frozen, the request held up) never makes a VM the controller has given up on. Absent: no deadline.',
  })
  @IsOptional()
  @IsRfc3339()
  deadline?: string;
}
