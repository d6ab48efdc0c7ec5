import { ApiProperty } from './openapi-decorators';
import { Transform, Type } from 'class-transformer';
import {
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
import { IsFleetId, IsVmType } from '../ids';
import { IsRfc3339 } from '../rfc3339';

export enum VmState {
  Running = 'Running',
  Stopped = 'Stopped',
  Provisioning = 'Provisioning',
  Error = 'Error',
}

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

export class VmRecord {
  @ApiProperty({
    example: 'vm-0123456789abcdef',
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$',
  })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ example: 'web', pattern: '^[A-Za-z0-9-]{1,63}$' })
  @IsVmType()
  vm_type!: string;

  @ApiProperty({ enum: VmState, enumName: 'VmState', example: VmState.Running })
  @IsEnum(VmState)
  state!: VmState;

  @ApiProperty({ type: 'integer', minimum: 1, example: 2048 })
  @Min(1)
  @IsInt()
  ram_alloc_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, example: 2 })
  @Min(1)
  @IsInt()
  vcpu_count!: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2026-08-06T12:00:00.123456789Z',
  })
  @Transform(({ value }: { value: unknown }) => value ?? null)
  @ValidateIf((_, value) => value !== null)
  @IsRfc3339()
  started_at: string | null = null;

  @ApiProperty({ type: String, nullable: true, required: false, example: 'acme' })
  @IsOptional()
  @IsFleetId()
  tenant_id?: string | null;

  @ApiProperty({ type: [HostPort], required: false, default: [] })
  @Transform(({ value }: { value: unknown }) => value ?? [])
  @ValidateNested({ each: true })
  @IsArray()
  @Type(() => HostPort)
  host_ports: HostPort[] = [];
}
