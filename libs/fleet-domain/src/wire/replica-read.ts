import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  Matches,
  MaxLength,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';
import { CHAIN_ID_PATTERN, MAX_REPLICA_CHAIN_FILES } from './replica-transfer';
import { MAX_COPY_GRANT_LENGTH, PEER_ADDRESS_PATTERN } from './vm-copies';

/** `<chain_id>/<index>`: one file of a chain (as RESTORE_POINT_ID, kept here to import nothing back). */
const POINT_ID = /^\d{8}T\d{6}Z-[0-9a-f]{4}\/\d{4}$/;
/** A chain file's name: `NNNN-full.qcow2` or `NNNN-incremental.qcow2`. */
export const CHAIN_FILE_NAME = /^\d{4}-(?:full|incremental)\.qcow2$/;

/**
 * Where a restore on a node that does not hold the copy pulls it from: the holder's agent, the
 * read grant the controller issued (signed with the holder's token, naming the VM, the holder
 * and this node), and the point to restore (a file of the holder's chain).
 */
export class RestorePull {
  @ApiProperty({
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description: 'The node holding the copy.',
  })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({
    example: '192.0.2.11:9100',
    maxLength: 64,
    description: "The holder's agent: its wg_ip and spawn_port.",
  })
  @Matches(PEER_ADDRESS_PATTERN)
  @MaxLength(64)
  address!: string;

  @ApiProperty({
    maxLength: MAX_COPY_GRANT_LENGTH,
    description:
      'A read grant: lets this node read that VM\'s copy on the holder alone, until it expires. Sent to the holder as "Authorization: Bearer <grant>".',
  })
  @Matches(/^[A-Za-z0-9_-]{1,900}\.[A-Za-z0-9_-]{43}$/)
  @MaxLength(MAX_COPY_GRANT_LENGTH)
  grant!: string;

  @ApiProperty({ maxLength: 32, pattern: POINT_ID.source, example: '20261205T041700Z-3f2a/0003' })
  @Matches(POINT_ID, { message: '$property must be <chain_id>/<index>' })
  backup_id!: string;
}

/** One file of the chain a holder serves, as its manifest wrote it. */
export class ReplicaChainFile {
  @ApiProperty({ maxLength: 32, pattern: CHAIN_FILE_NAME.source, example: '0000-full.qcow2' })
  @Matches(CHAIN_FILE_NAME)
  file!: string;

  @ApiProperty({ enum: ['full', 'incremental'] })
  @IsIn(['full', 'incremental'])
  kind!: 'full' | 'incremental';

  @ApiProperty({ format: 'date-time', maxLength: RFC3339_MAX_LENGTH })
  @IsRfc3339()
  taken_at!: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  size_bytes!: number;

  @ApiProperty({ pattern: '^[0-9a-f]{64}$' })
  @Matches(/^[0-9a-f]{64}$/)
  sha256!: string;
}

/**
 * GET /v1/replicas/{vm_id}/read?point=<chain_id>/<index> on the holder (read grant): the files
 * of the chain up to that point, in order, each then read whole from .../read/files/{file}.
 */
export class ReplicaChainRead {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ maxLength: 32, pattern: CHAIN_ID_PATTERN.source })
  @Matches(CHAIN_ID_PATTERN)
  chain_id!: string;

  @ApiProperty({ type: [ReplicaChainFile], maxItems: MAX_REPLICA_CHAIN_FILES })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_REPLICA_CHAIN_FILES)
  @IsArray()
  @Type(() => ReplicaChainFile)
  files!: ReplicaChainFile[];
}

/** ?point=<chain_id>/<index> of the replica read route. */
export class ReplicaPointQuery {
  @ApiProperty({ maxLength: 32, pattern: POINT_ID.source, example: '20261205T041700Z-3f2a/0003' })
  @Matches(POINT_ID, { message: '$property must be <chain_id>/<index>' })
  point!: string;
}

/** /v1/replicas/{vm_id}/read/files/{chain_id}/{file}. */
export class ReplicaFileParams {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ maxLength: 32, pattern: CHAIN_ID_PATTERN.source })
  @Matches(CHAIN_ID_PATTERN)
  chain_id!: string;

  @ApiProperty({ maxLength: 32, pattern: CHAIN_FILE_NAME.source, example: '0000-full.qcow2' })
  @Matches(CHAIN_FILE_NAME)
  file!: string;
}
