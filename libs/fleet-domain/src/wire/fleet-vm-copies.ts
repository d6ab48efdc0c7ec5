import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsInt,
  IsObject,
  IsOptional,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsPrintableText } from '../ids';
import { IsRfc3339 } from '../rfc3339';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';
import { VmBackups } from './vm-backup';
import { CopyPolicy, HeartbeatReplica } from './vm-copies';

/** The most peer copies of one VM an answer lists (freshest first). */
export const MAX_COPIES_LISTED = 64;
/** Longest reason an answer gives for backups it could not read. */
export const MAX_BACKUPS_UNREAD_REASON = 300;

const nullable = ValidateIf((_, value) => value !== null);

/** A copy of the VM a live node other than its own holds (as that node's heartbeat says). */
export class VmPeerCopy extends HeartbeatReplica {
  @ApiProperty({
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description: 'The node holding the copy (a `--from` of `ppn-fleet vm restore`).',
  })
  @IsFleetId()
  node_id!: string;
}

/**
 * GET /v1/vms/{vm_id}/copies on the operations listener: what protects a VM. Its copy policy, the
 * copies other nodes hold, and the backups in its node's VM_BACKUP_DIR.
 */
export class VmCopies {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA, description: "The VM's node." })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({
    type: CopyPolicy,
    nullable: true,
    description:
      "The copy policy the VM's agent keeps for it (its last heartbeat); null when the agent reports none (an agent before copies).",
  })
  @nullable
  @ValidateNested()
  @IsObject()
  @Type(() => CopyPolicy)
  policy!: CopyPolicy | null;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      "As GET /v1/vms shows it: the freshest copy sent by the VM's node and held on another live node; null while none is.",
  })
  @nullable
  @IsRfc3339()
  copied_at!: string | null;

  @ApiProperty({ type: String, nullable: true, ...ID_SCHEMA, description: 'The node holding it.' })
  @nullable
  @IsFleetId()
  copy_node_id!: string | null;

  @ApiProperty({
    type: [VmPeerCopy],
    maxItems: MAX_COPIES_LISTED,
    description:
      "Every copy of the VM held by a live node other than its own, freshest first; a copy whose source_node_id is not the VM's node was sent by a node that ran it before.",
  })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_COPIES_LISTED)
  @IsArray()
  @Type(() => VmPeerCopy)
  copies!: VmPeerCopy[];

  @ApiProperty({
    type: VmBackups,
    nullable: true,
    description:
      "The backups in the VM's node's VM_BACKUP_DIR, as its agent answered just now; null when they could not be read (backups_unread says why).",
  })
  @nullable
  @ValidateNested()
  @IsObject()
  @Type(() => VmBackups)
  backups!: VmBackups | null;

  @ApiProperty({
    type: String,
    nullable: true,
    maxLength: MAX_BACKUPS_UNREAD_REASON,
    example: null,
    description:
      "Why backups is null: the VM's node is silent, its agent could not be reached or answered what its API does not give. The copies are shown all the same.",
  })
  @nullable
  @IsPrintableText(MAX_BACKUPS_UNREAD_REASON)
  backups_unread!: string | null;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    required: false,
    example: 1,
    description:
      'etcd mode: how many times the leader recovered the VM on another node (its generation, raised at each recovery); a node that ran an older generation never starts it again. Absent: never recovered, or not etcd mode.',
  })
  @IsOptional()
  @Min(1)
  @IsInt()
  generation?: number;
}
