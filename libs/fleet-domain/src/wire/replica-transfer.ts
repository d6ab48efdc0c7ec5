import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, Matches, Max, Min } from 'class-validator';
import { ID_SCHEMA, IsFleetId } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';

/** A chain's id, as backups and replicas name their folders: `20261205T041700Z-3f2a`. */
export const CHAIN_ID_PATTERN = /^\d{8}T\d{6}Z-[0-9a-f]{4}$/;
/** The most one chunk of a transfer carries: a slow link still sends one well within 30 s. */
export const MAX_REPLICA_CHUNK_BYTES = 16 * 1024 * 1024;
/** The most a chain may hold: a replica's chain starts again (full) before it gets longer. */
export const MAX_REPLICA_CHAIN_FILES = 64;
/** A transfer's id: `<chain_id>.<index>`. */
export const TRANSFER_ID_PATTERN = /^\d{8}T\d{6}Z-[0-9a-f]{4}\.\d{1,4}$/;

/** What a peer holds of a VM's copy (GET /v1/replicas/{vm_id}), for the VM's source. */
export class ReplicaState {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  vm_id!: string;

  @ApiProperty({
    type: String,
    nullable: true,
    example: EXAMPLE_NODE_ID,
    description: 'The node that sent the chain; null: no copy held.',
  })
  source_node_id!: string | null;

  @ApiProperty({ type: String, nullable: true, pattern: CHAIN_ID_PATTERN.source })
  chain_id!: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Files in the chain (0: none).' })
  files!: number;

  @ApiProperty({ type: String, nullable: true, example: '0003-incremental.qcow2' })
  last_file!: string | null;

  @ApiProperty({ type: String, nullable: true, format: 'date-time' })
  copied_at!: string | null;

  @ApiProperty({ type: 'integer', minimum: 0 })
  size_bytes!: number;
}

/** POST /v1/replicas/{vm_id}/transfers: one file of a VM's copy about to be sent in chunks. */
export class StartReplicaTransfer {
  @ApiProperty({
    enum: ['full', 'incremental'],
    description: 'full: starts a new chain (the old one removed once it is complete).',
  })
  @IsIn(['full', 'incremental'])
  kind!: 'full' | 'incremental';

  @ApiProperty({
    required: false,
    pattern: CHAIN_ID_PATTERN.source,
    description: 'With incremental: the chain it adds to (the one the peer holds).',
  })
  @IsOptional()
  @Matches(CHAIN_ID_PATTERN)
  chain_id?: string;

  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 1,
    maximum: MAX_REPLICA_CHAIN_FILES - 1,
    description: "With incremental: its place in the chain (the peer's files count).",
  })
  @IsOptional()
  @Max(MAX_REPLICA_CHAIN_FILES - 1)
  @Min(1)
  @IsInt()
  index?: number;

  @ApiProperty({ type: 'integer', minimum: 1, description: 'The whole file, in bytes.' })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(1)
  @IsInt()
  size_bytes!: number;

  @ApiProperty({ format: 'date-time', maxLength: RFC3339_MAX_LENGTH })
  @IsRfc3339()
  taken_at!: string;

  @ApiProperty({ enum: ['running', 'stopped'] })
  @IsIn(['running', 'stopped'])
  vm_state!: 'running' | 'stopped';

  @ApiProperty({
    type: Object,
    required: false,
    description: "The VM's record, for the chain's manifest.",
  })
  @IsOptional()
  @IsObject()
  vm?: Record<string, unknown>;

  @ApiProperty({
    type: Object,
    required: false,
    description: 'What would make the same VM again, for the manifest.',
  })
  @IsOptional()
  @IsObject()
  create_request?: Record<string, unknown>;
}

/** A transfer under way: where its next chunk starts. */
export class ReplicaTransfer {
  @ApiProperty({ pattern: TRANSFER_ID_PATTERN.source })
  transfer_id!: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  offset!: number;
}

export class ReplicaTransferParams {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ pattern: TRANSFER_ID_PATTERN.source })
  @Matches(TRANSFER_ID_PATTERN)
  transfer_id!: string;
}

export class ReplicaChunkQuery {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Where this chunk starts in the file.' })
  @Type(() => Number)
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  offset!: number;
}
