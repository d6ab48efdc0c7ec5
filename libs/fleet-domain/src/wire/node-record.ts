import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsInt, IsString, Max, Min, ValidateNested } from 'class-validator';
import { IsFleetId } from '../ids';
import { EXAMPLE_NODE_ID, EXAMPLE_WG_IP } from './examples';

/**
 * A live node as every listing shows it. Exactly these eight fields, no status field. Its rules
 * are what the CLI checks the answer against.
 */
export class NodeRecord {
  @ApiProperty({ example: EXAMPLE_NODE_ID })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({ example: EXAMPLE_NODE_ID })
  @IsString()
  hostname!: string;

  @ApiProperty({ example: EXAMPLE_WG_IP })
  @IsString()
  wg_ip!: string;

  @ApiProperty({ type: 'integer', minimum: 0, example: 24576 })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  ram_available_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 2 })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  vm_count!: number;

  @ApiProperty({ example: true })
  @IsBoolean()
  kvm_available!: boolean;

  @ApiProperty({ example: false })
  @IsBoolean()
  reserved!: boolean;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-08-06T12:00:00.123Z' })
  @IsString()
  last_heartbeat!: string;
}

export class FleetStatus {
  @ApiProperty({ type: [NodeRecord] })
  @ValidateNested({ each: true })
  @IsArray()
  @Type(() => NodeRecord)
  nodes!: NodeRecord[];

  @ApiProperty({ type: String, format: 'date-time', example: '2026-08-06T12:00:05.000Z' })
  @IsString()
  last_updated!: string;
}
