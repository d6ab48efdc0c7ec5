import { ApiProperty } from './openapi-decorators';

/** A live node as every listing shows it. Exactly these eight fields, no status field. */
export class NodeRecord {
  @ApiProperty({ example: 'compute-west-01' })
  node_id!: string;

  @ApiProperty({ example: 'compute-west-01' })
  hostname!: string;

  @ApiProperty({ example: '10.8.0.21' })
  wg_ip!: string;

  @ApiProperty({ type: 'integer', minimum: 0, example: 24576 })
  ram_available_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 2 })
  vm_count!: number;

  @ApiProperty({ example: true })
  kvm_available!: boolean;

  @ApiProperty({ example: false })
  reserved!: boolean;

  @ApiProperty({ type: String, format: 'date-time', example: '2026-08-06T12:00:00.123Z' })
  last_heartbeat!: string;
}

export class FleetStatus {
  @ApiProperty({ type: [NodeRecord] })
  nodes!: NodeRecord[];

  @ApiProperty({ type: String, format: 'date-time', example: '2026-08-06T12:00:05.000Z' })
  last_updated!: string;
}
