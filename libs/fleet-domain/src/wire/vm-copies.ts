import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsOptional,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsPrintableText } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';

/** Peer copies a VM may ask for: none, one or two other nodes. */
export const MAX_VM_COPIES = 2;
/** The shortest interval between two copies of one VM, and the longest (a day). */
export const MIN_COPY_EVERY_S = 30;
export const MAX_COPY_EVERY_S = 86_400;
/** The most peer copies one node reports holding in a heartbeat. */
export const MAX_REPLICAS_REPORTED = 512;
/** Longest copy grant: base64url payload, a dot, base64url HMAC-SHA256. */
export const MAX_COPY_GRANT_LENGTH = 1024;
/** `host:port` of a peer's agent: an IPv4 or bracketed IPv6 literal and a port. */
export const PEER_ADDRESS_PATTERN = /^(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]{2,45}\]):\d{1,5}$/;

/**
 * How a VM is copied to other nodes: how many copies (each on another node) and how often.
 * Absent from a create: the controller's defaults (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S).
 */
export class CopyPolicy {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: MAX_VM_COPIES,
    example: 1,
    description: 'Copies of the VM kept on other nodes (each on a different node); 0: none.',
  })
  @Min(0)
  @Max(MAX_VM_COPIES)
  @IsInt()
  count!: number;

  @ApiProperty({
    type: 'integer',
    minimum: MIN_COPY_EVERY_S,
    maximum: MAX_COPY_EVERY_S,
    example: 60,
    description: 'Seconds between two copies of the running VM (a stopped VM is copied once).',
  })
  @Min(MIN_COPY_EVERY_S)
  @Max(MAX_COPY_EVERY_S)
  @IsInt()
  every_s!: number;
}

/** A copy of another node's VM that a node holds, as its heartbeat reports it. */
export class HeartbeatReplica {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description: 'The node whose agent sent the copy (the node that ran the VM then).',
  })
  @IsFleetId()
  source_node_id!: string;

  @ApiProperty({
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    description:
      "When the source took the newest complete, checked transfer (the copy's point in time).",
  })
  @IsRfc3339()
  copied_at!: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: "The copy's files on disk, in bytes." })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  size_bytes!: number;
}

/** One node a VM is copied to, and the grant that lets its source write there. */
export class CopyPeer {
  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({
    example: '192.0.2.11:9100',
    maxLength: 64,
    description: "The peer's agent: its wg_ip and spawn_port.",
  })
  @Matches(PEER_ADDRESS_PATTERN)
  @MaxLength(64)
  address!: string;

  @ApiProperty({
    maxLength: MAX_COPY_GRANT_LENGTH,
    description:
      "Issued by the controller, signed with the peer's node token: lets this VM's node write (and read back) this VM's copy on that peer alone, until expires_at. Sent to the peer as \"Authorization: Bearer <grant>\".",
  })
  @Matches(/^[A-Za-z0-9_-]{1,900}\.[A-Za-z0-9_-]{43}$/)
  @MaxLength(MAX_COPY_GRANT_LENGTH)
  grant!: string;

  @ApiProperty({ format: 'date-time', maxLength: RFC3339_MAX_LENGTH })
  @IsRfc3339()
  expires_at!: string;
}

/**
 * What the controller tells a VM's agent about its copies (PUT /v1/vms/{vm_id}/copy-plan on the
 * agent): how often, and to which peers. Sent again when the peers change or a grant nears its end.
 */
export class CopyPlan {
  @ApiProperty({ type: 'integer', minimum: MIN_COPY_EVERY_S, maximum: MAX_COPY_EVERY_S })
  @Min(MIN_COPY_EVERY_S)
  @Max(MAX_COPY_EVERY_S)
  @IsInt()
  every_s!: number;

  @ApiProperty({ type: [CopyPeer], maxItems: MAX_VM_COPIES, description: 'Empty: copy nowhere.' })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_VM_COPIES)
  @IsArray()
  @Type(() => CopyPeer)
  peers!: CopyPeer[];
}

/** POST /v1/vms/{vm_id}/restore on the operations listener. */
export class RestoreVmRequest {
  @ApiProperty({
    required: false,
    maxLength: 128,
    example: EXAMPLE_NODE_ID,
    description:
      'Where to restore from: a node id (the copy that node holds) or a backup id (`<chain_id>/<index>`, from the backups of the node named by `to`). Absent: the freshest copy.',
  })
  @IsOptional()
  @IsPrintableText(128)
  from?: string;

  @ApiProperty({
    required: false,
    format: 'date-time',
    maxLength: RFC3339_MAX_LENGTH,
    description: 'With a backup: the newest backup taken at or before this time.',
  })
  @IsOptional()
  @IsRfc3339()
  at?: string;

  @ApiProperty({ required: false, example: EXAMPLE_NODE_ID, ...ID_SCHEMA })
  @IsOptional()
  @IsFleetId()
  to?: string;

  @ApiProperty({
    required: false,
    default: false,
    description:
      'Restore as a new VM (a new id, new host ports) beside the original, which may still run.',
  })
  @IsOptional()
  @IsBoolean()
  as_new?: boolean;
}
