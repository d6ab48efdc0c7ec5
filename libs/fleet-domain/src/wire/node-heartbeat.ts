import { ApiProperty } from './openapi-decorators';
import { Transform, Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { IsFleetId } from '../ids';
import { IsRfc3339 } from '../rfc3339';
import { VmRecord } from './vm-record';

/** What every agent POSTs to /v1/nodes/heartbeat. Unknown extra fields are ignored. */
export class NodeHeartbeat {
  @ApiProperty({ example: 'compute-west-01', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$' })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({ example: '10.8.0.21', description: "The node's WireGuard IP address." })
  @Length(1, 64)
  @IsString()
  wg_ip!: string;

  @ApiProperty({ example: 'compute-west-01' })
  @Length(1, 253)
  @IsString()
  hostname!: string;

  @ApiProperty({ type: 'integer', minimum: 0, example: 32768 })
  @Min(0)
  @IsInt()
  ram_total_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 8192 })
  @Min(0)
  @IsInt()
  ram_used_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 8 })
  @Min(0)
  @IsInt()
  cpu_cores!: number;

  @ApiProperty({ type: Number, minimum: 0, maximum: 100, example: 12.5 })
  @Min(0)
  @Max(100)
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

  @ApiProperty({ type: [VmRecord] })
  @ValidateNested({ each: true })
  @IsArray()
  @Type(() => VmRecord)
  vms!: VmRecord[];

  @ApiProperty({ example: '4f0b6a8e-3c1d-4c53-9a53-2f5d2f0e9d10' })
  @IsFleetId()
  boot_id!: string;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-08-06T12:00:00.123456789Z' })
  @IsRfc3339()
  timestamp_utc!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: 65535,
    required: false,
    description: "Port of the agent's local API; absent means 9204.",
  })
  @IsOptional()
  @Min(1)
  @Max(65535)
  @IsInt()
  spawn_port?: number;
}
