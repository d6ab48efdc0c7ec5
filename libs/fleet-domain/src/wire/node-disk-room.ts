import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import { IsObject, IsString, ValidateIf, ValidateNested } from 'class-validator';
import { EXAMPLE_NODE_ID } from './examples';
import { HeartbeatDiskRoom } from './node-heartbeat';

/**
 * A live node's disk room as its last heartbeat reported it: beside the node records, which
 * keep their eight fields.
 */
export class NodeDiskRoom {
  @ApiProperty({ example: EXAMPLE_NODE_ID })
  @IsString()
  node_id!: string;

  @ApiProperty({
    type: HeartbeatDiskRoom,
    nullable: true,
    description: 'null: its agent reports none (an older agent, or VM_DISK_DIR unreadable).',
  })
  @ValidateIf((_, value) => value !== null)
  @ValidateNested()
  @IsObject()
  @Type(() => HeartbeatDiskRoom)
  disk_room!: HeartbeatDiskRoom | null;
}
