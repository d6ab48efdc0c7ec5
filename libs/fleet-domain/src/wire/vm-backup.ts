import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsIn,
  IsInt,
  Matches,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsPrintableText } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from './examples';

/** Longest path of a backup file an agent reports, and of its reasons. */
export const MAX_BACKUP_TEXT = 1024;
/** The most backups one VM's listing carries (newest first): retention keeps far fewer. */
export const MAX_BACKUPS_LISTED = 1000;

const nullable = ValidateIf((_, value) => value !== null);

/** One backup of a VM: a point in time, the last file of a qcow2 chain in VM_BACKUP_DIR. */
export class VmBackup {
  @ApiProperty({
    example: '20261205T041700Z-3f2a/0001',
    maxLength: 64,
    pattern: '^[0-9A-Za-z-]{1,48}/[0-9]{4}$',
    description: 'The chain (its folder) and the file in it: `<chain_id>/<index>`.',
  })
  @Matches(/^[0-9A-Za-z-]{1,48}\/[0-9]{4}$/)
  backup_id!: string;

  @ApiProperty({
    enum: ['full', 'incremental'],
    description:
      "full: the whole disk in one file; incremental: the clusters written since the chain's previous backup, in a file whose backing is that one.",
  })
  @IsIn(['full', 'incremental'])
  kind!: 'full' | 'incremental';

  @ApiProperty({ format: 'date-time', maxLength: RFC3339_MAX_LENGTH })
  @IsRfc3339()
  taken_at!: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: "This file's size on disk, in bytes." })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  size_bytes!: number;

  @ApiProperty({
    maxLength: MAX_BACKUP_TEXT,
    example: '/mnt/usb/vm-backups/vm-0123456789abcdef/20261205T041700Z-3f2a/0001-incremental.qcow2',
    description:
      "The file on the node: `qemu-img convert -O qcow2 <path> disk.qcow2` makes the VM's whole disk as of taken_at from it and the files before it in its folder.",
  })
  @IsPrintableText(MAX_BACKUP_TEXT)
  path!: string;
}

/** A VM's backups on its node, and the node's backup under way or failed. */
export class VmBackups {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({
    type: [VmBackup],
    maxItems: MAX_BACKUPS_LISTED,
    description: 'Newest first.',
  })
  @ValidateNested({ each: true })
  @ArrayMaxSize(MAX_BACKUPS_LISTED)
  @IsArray()
  @Type(() => VmBackup)
  backups!: VmBackup[];

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    maxLength: RFC3339_MAX_LENGTH,
    example: null,
    description: 'When the backup under way began; null when none is.',
  })
  @nullable
  @IsRfc3339()
  in_progress_since!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    maxLength: MAX_BACKUP_TEXT,
    example: null,
    description: "Why this agent's last backup of the VM failed; null once one succeeded.",
  })
  @nullable
  @IsPrintableText(MAX_BACKUP_TEXT)
  last_error!: string | null;
}

/** A VM's backups as the controller's operations listener answers: with the node they are on. */
export class FleetVmBackups extends VmBackups {
  @ApiProperty({
    example: EXAMPLE_NODE_ID,
    ...ID_SCHEMA,
    description: "The VM's node, whose VM_BACKUP_DIR holds these backups.",
  })
  @IsFleetId()
  node_id!: string;
}
