import { ApiProperty } from '@app/api-basics';
import { Transform, Type } from 'class-transformer';
import {
  IsBoolean,
  IsEnum,
  IsInt,
  IsOptional,
  IsString,
  MaxLength,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
} from 'class-validator';
import { ID_SCHEMA, IsFleetId, IsPrintableText } from '../ids';
import { IsRfc3339, RFC3339_MAX_LENGTH } from '../rfc3339';
import { EXAMPLE_VM_ID } from './examples';
import { VmState } from './vm-record';

/** What the operator asked a VM to be: running from its create on, stopped once stopped. */
export enum DesiredVmState {
  Running = 'running',
  Stopped = 'stopped',
}

/** An operator's action under way on the agent. */
export enum VmOperation {
  Stopping = 'stopping',
  Starting = 'starting',
  Restarting = 'restarting',
}

/** How long a stop waits for the guest to power down after ACPI before ending QEMU. */
export const DEFAULT_STOP_TIMEOUT_S = 60;
export const MAX_STOP_TIMEOUT_S = 600;

/** The most of a serial console one read gives (the last part of it when asked for more). */
export const MAX_CONSOLE_BYTES = 1024 * 1024;
export const DEFAULT_CONSOLE_BYTES = 64 * 1024;

/** Longest reason or exit text an agent reports (longer ones are cut). */
export const MAX_LIFE_CYCLE_TEXT = 512;

/** Most restarts a life cycle reports: a bound on what a node may claim. */
export const MAX_RESTART_COUNT = 1_000_000;

const nullable = ValidateIf((_, value) => value !== null);

/**
 * What a console text may hold: printable characters, tabs and newlines; no other control or
 * format character (terminal escapes, bidi overrides), so a hostile node's console reaches no
 * terminal or page through the controller.
 */
const CONSOLE_UNPRINTABLE = /[^\P{C}\t\n]|[\p{Zl}\p{Zp}]/u;

function IsConsoleText(): PropertyDecorator {
  return ValidateBy({
    name: 'isConsoleText',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && !CONSOLE_UNPRINTABLE.test(value),
      defaultMessage: () =>
        '$property must be printable text (tabs and newlines, no other control characters)',
    },
  });
}

/**
 * A VM's life cycle on its node: its state, the state the operator asked for, and why they
 * differ (a restart waiting out its backoff, a crash loop, an operation under way).
 */
export class VmLifeCycle {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ enum: VmState, enumName: 'VmState', example: VmState.Running })
  @IsEnum(VmState)
  state!: VmState;

  @ApiProperty({
    enum: DesiredVmState,
    enumName: 'DesiredVmState',
    example: DesiredVmState.Running,
    description:
      'running from the create on, stopped once an operator stops it, running again once started; kept with the VM on its node across agent restarts and reboots.',
  })
  @IsEnum(DesiredVmState)
  desired_state!: DesiredVmState;

  @ApiProperty({
    enum: VmOperation,
    enumName: 'VmOperation',
    nullable: true,
    type: String,
    example: VmOperation.Stopping,
    description: 'An operation under way on the node; null when none is.',
  })
  @nullable
  @IsEnum(VmOperation)
  operation!: VmOperation | null;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    maximum: MAX_RESTART_COUNT,
    example: 0,
    description:
      "Failures in a row: its process ending without an operator asking (a crash; not a node's reboot) or a start from its disk failing or finding no room. 3 or more list it Error while it has no process. Back to 0 once it has run 10 min, when an operator stops or starts it, and when its agent restarts.",
  })
  @Max(MAX_RESTART_COUNT)
  @Min(0)
  @IsInt()
  restart_count!: number;

  @ApiProperty({
    type: String,
    nullable: true,
    maxLength: MAX_LIFE_CYCLE_TEXT,
    example: 'QEMU process 4242 ended while the VM should run',
    description:
      "How the VM's process last ended without an operator asking; null if it never did.",
  })
  @nullable
  @IsPrintableText(MAX_LIFE_CYCLE_TEXT)
  last_exit!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    maxLength: MAX_LIFE_CYCLE_TEXT,
    example: null,
    description:
      'Why the VM is in Error (a crash loop, a start that fails, no room left on the node), or why it is not running as asked; null otherwise.',
  })
  @nullable
  @IsPrintableText(MAX_LIFE_CYCLE_TEXT)
  reason!: string | null;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    maxLength: RFC3339_MAX_LENGTH,
    example: null,
    description:
      'When the agent starts the VM again (its restart backoff: 5 s doubling to 5 min); null when no start is planned.',
  })
  @nullable
  @IsRfc3339()
  next_start_at!: string | null;
}

export class StopVmRequest {
  @ApiProperty({
    required: false,
    default: false,
    description: 'true: end QEMU at once, without asking the guest to power down first.',
  })
  @Transform(({ value }: { value: unknown }) => value ?? false)
  @IsBoolean()
  force: boolean = false;

  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 1,
    maximum: MAX_STOP_TIMEOUT_S,
    default: DEFAULT_STOP_TIMEOUT_S,
    description:
      'How long the guest has to power down after the ACPI request before QEMU is ended.',
  })
  @Transform(({ value }: { value: unknown }) => value ?? DEFAULT_STOP_TIMEOUT_S)
  @Max(MAX_STOP_TIMEOUT_S)
  @Min(1)
  @IsInt()
  timeout_s: number = DEFAULT_STOP_TIMEOUT_S;
}

export class RestartVmRequest extends StopVmRequest {}

export class VmConsoleQuery {
  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 0,
    description:
      "Byte offset in the console log to read from (a follower passes the last answer's `next`); absent: the last max_bytes.",
  })
  @IsOptional()
  @Type(() => Number)
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  from?: number;

  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 1,
    maximum: MAX_CONSOLE_BYTES,
    default: DEFAULT_CONSOLE_BYTES,
  })
  @IsOptional()
  @Type(() => Number)
  @Max(MAX_CONSOLE_BYTES)
  @Min(1)
  @IsInt()
  max_bytes?: number;
}

/** A part of a VM's serial console log, made printable. */
export class VmConsole {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Byte offset of the first byte of text in the log of the current boot.',
  })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  from!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Byte offset to read from next (the log size when it was read).',
  })
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  next!: number;

  @ApiProperty({
    description:
      'Printable text: tabs and newlines kept, other control characters and terminal escapes left out, invalid UTF-8 replaced.',
    maxLength: MAX_CONSOLE_BYTES * 3,
  })
  @IsConsoleText()
  @MaxLength(MAX_CONSOLE_BYTES * 3)
  @IsString()
  text!: string;

  @ApiProperty({
    description:
      'true when the log restarted (a new boot) or older bytes than asked for are no longer there.',
  })
  @IsBoolean()
  reset!: boolean;
}
