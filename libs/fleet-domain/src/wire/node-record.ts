import { ApiProperty } from '@app/api-basics';
import { EXAMPLE_NODE_ID, EXAMPLE_WG_IP } from './examples';

/** A live node as every listing shows it. Exactly these eight fields, no status field. */
export class NodeRecord {
  @ApiProperty({ example: EXAMPLE_NODE_ID })
  node_id!: string;

  @ApiProperty({ example: EXAMPLE_NODE_ID })
  hostname!: string;

  @ApiProperty({ example: EXAMPLE_WG_IP })
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
