import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsString,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA } from '../ids';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';
import { MOVE_MODES, MoveMode } from './vm-moves';

/** What became of one VM of a drained node. */
export const DRAIN_OUTCOMES = ['moved', 'left', 'failed'] as const;
export type DrainOutcome = (typeof DRAIN_OUTCOMES)[number];

/** One VM of a drain: moved (where, how), left where it is (why), or its move failed (why). */
export class DrainedVm {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsString()
  vm_id!: string;

  @ApiProperty({
    enum: DRAIN_OUTCOMES,
    example: 'moved',
    description:
      'moved: it runs (or sits stopped) on `to_node_id` now. left: it could not move (no room on any other node, not Running or Stopped) and is still on the drained node, as it was. failed: its move failed midway; it is left on the drained node.',
  })
  @IsIn(DRAIN_OUTCOMES)
  outcome!: DrainOutcome;

  @ApiProperty({ type: String, nullable: true, example: 'n2', ...ID_SCHEMA })
  @ValidateIf((_, value) => value !== null)
  @IsString()
  to_node_id!: string | null;

  @ApiProperty({ enum: MOVE_MODES, nullable: true, example: 'live' })
  @ValidateIf((_, value) => value !== null)
  @IsIn(MOVE_MODES)
  mode!: MoveMode | null;

  @ApiProperty({
    type: String,
    nullable: true,
    maxLength: 600,
    description:
      "Why it was left or failed (the move's refusal, placement's reasons); null when moved.",
  })
  @ValidateIf((_, value) => value !== null)
  @IsString()
  message!: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'How long its move took, in ms.' })
  @Min(0)
  @IsInt()
  took_ms!: number;
}

/** A node's drain: POST /v1/nodes/{node_id}/drain and /undrain, GET /v1/nodes/{node_id}/drain. */
export class NodeDrain {
  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA })
  @IsString()
  node_id!: string;

  @ApiProperty({
    description:
      'Whether the node is drained: placement passes it over (creates, moves, restores, recoveries) until `node undrain`.',
  })
  @IsBoolean()
  drained!: boolean;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2026-08-06T12:00:00.000Z',
    description: 'When the drain began; null when the node is not drained.',
  })
  @ValidateIf((_, value) => value !== null)
  @IsString()
  since!: string | null;

  @ApiProperty({
    type: [DrainedVm],
    description:
      'What the latest drain did with each VM, in the order each ended (kept until `undrain`); a drain under way lists those done so far.',
  })
  @ValidateNested({ each: true })
  @IsArray()
  @Type(() => DrainedVm)
  vms!: DrainedVm[];

  @ApiProperty({
    type: 'array',
    items: { type: 'string', ...ID_SCHEMA },
    example: [],
    description:
      'The VMs its live agent still lists (none once drained; any left said why in `vms`).',
  })
  @IsString({ each: true })
  @IsArray()
  remaining_vm_ids!: string[];
}
