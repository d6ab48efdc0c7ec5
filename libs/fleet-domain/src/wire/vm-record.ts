import { ApiProperty } from '@app/api-basics';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsEnum,
  IsIn,
  IsInt,
  IsOptional,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { MAX_HOST_CPU_CORES, MAX_HOST_PORTS_PER_VM, MAX_HOST_RAM_MB } from '../fleet.constants';
import { ID_SCHEMA, IsFleetId, IsVmType, VM_TYPE_SCHEMA } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_TENANT_ID, EXAMPLE_VM_ID } from './examples';

export enum VmState {
  Running = 'Running',
  Stopped = 'Stopped',
  Provisioning = 'Provisioning',
  Error = 'Error',
}

/** How a VM runs: under KVM (hardware virtualization) or TCG (QEMU's emulation). */
export const VM_ACCELS = ['kvm', 'tcg'] as const;
export type VmAccel = (typeof VM_ACCELS)[number];

export class HostPort {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 65535, example: 22022 })
  @Min(1)
  @Max(65535)
  @IsInt()
  host_port!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 65535, example: 22 })
  @Min(1)
  @Max(65535)
  @IsInt()
  guest_port!: number;

  @ApiProperty({ enum: ['tcp', 'udp'], example: 'tcp' })
  @IsIn(['tcp', 'udp'])
  protocol!: 'tcp' | 'udp';
}

/**
 * A VM as every answer shows it: all nine fields, always. (What agents report in heartbeats,
 * HeartbeatVm, may leave out tenant_id, host_ports and accel; they are filled in on arrival.)
 */
export class VmRecord {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ example: 'web', ...VM_TYPE_SCHEMA })
  @IsVmType()
  vm_type!: string;

  @ApiProperty({ enum: VmState, enumName: 'VmState', example: VmState.Running })
  @IsEnum(VmState)
  state!: VmState;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_HOST_RAM_MB, example: 2048 })
  @Max(MAX_HOST_RAM_MB)
  @Min(1)
  @IsInt()
  ram_alloc_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_HOST_CPU_CORES, example: 2 })
  @Max(MAX_HOST_CPU_CORES)
  @Min(1)
  @IsInt()
  vcpu_count!: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    nullable: true,
    example: '2026-08-06T12:00:00.123456789Z',
    description: 'When QEMU started it; null while it has not (yet) run. Never left out.',
  })
  @ValidateIf((_, value) => value !== null)
  @IsRfc3339({
    message:
      '$property must be an RFC 3339 date-time such as 2026-08-06T12:00:00.123456789Z, or null',
  })
  started_at!: string | null;

  @ApiProperty({ type: String, nullable: true, example: EXAMPLE_TENANT_ID, ...ID_SCHEMA })
  @IsOptional()
  @IsFleetId()
  tenant_id: string | null = null;

  @ApiProperty({ type: [HostPort], maxItems: MAX_HOST_PORTS_PER_VM })
  @Transform(({ value }: { value: unknown }) => value ?? [])
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_HOST_PORTS_PER_VM)
  @IsArray()
  @Type(() => HostPort)
  host_ports: HostPort[] = [];

  @ApiProperty({
    enum: VM_ACCELS,
    nullable: true,
    example: 'kvm',
    description:
      "How the VM runs on its node: kvm (hardware virtualization) or tcg (QEMU's emulation, slower). Chosen by the node's agent (VM_ACCEL; prefer_kvm only steers placement), tcg when KVM failed there. Null while the VM has not (yet) been started, and from agents that do not report it.",
  })
  @IsOptional()
  @IsIn(VM_ACCELS)
  accel?: VmAccel | null = null;
}
