import { ApiProperty } from '@app/api-basics';
import { IsArray, IsString, ValidateIf } from 'class-validator';
import { ID_SCHEMA } from '../ids';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';

/** POST /v1/nodes/{node_id}/declare-dead's answer (operations listener, etcd mode). */
export class DeclaredDeadNode {
  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA })
  @IsString()
  node_id!: string;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2026-08-06T12:00:00.000Z',
    description: 'When a controller last renewed its lease; null when etcd keeps no such time.',
  })
  @ValidateIf((_, value) => value !== null)
  @IsString()
  last_renewed_at!: string | null;

  @ApiProperty({
    type: 'array',
    items: { type: 'string', ...ID_SCHEMA },
    example: [EXAMPLE_VM_ID],
    description:
      'Its protected VMs (copies count 1 or 2) the controllers know of: the leader restores each from its freshest copy on another live node at its next pass (every 5 s), once the node is no longer listed live (30 s after its last heartbeat).',
  })
  @IsString({ each: true })
  @IsArray()
  protected_vm_ids!: string[];
}
