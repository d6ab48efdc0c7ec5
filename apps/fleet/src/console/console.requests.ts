import { Transform, Type } from 'class-transformer';
import {
  IsInt,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
} from 'class-validator';
import {
  CreateVmRequest,
  IsFleetId,
  MAX_COPY_EVERY_S,
  MAX_VM_COPIES,
  MIN_COPY_EVERY_S,
} from '@app/fleet-domain';

/** An empty filter (the form's "any") is no filter. */
const emptyIsAbsent = Transform(({ value }: { value: unknown }) =>
  value === '' ? undefined : value,
);

/** The overview's filters, from its query (the filter form's GET). */
export class ConsoleFiltersQuery {
  @emptyIsAbsent
  @IsOptional()
  @IsFleetId()
  tenant?: string;

  @emptyIsAbsent
  @IsOptional()
  @IsFleetId()
  node?: string;
}

/** Where the page's follower of a serial console reads from next. */
export class ConsoleSerialQuery {
  @IsOptional()
  @Type(() => Number)
  @Max(Number.MAX_SAFE_INTEGER)
  @Min(0)
  @IsInt()
  from?: number;
}

/** The login form: the API token. */
export class LoginRequest {
  @MaxLength(512)
  @MinLength(1)
  @IsString()
  token!: string;
}

/**
 * The create form: a CreateVmRequest whose copy policy comes as two flat fields (the page's
 * script sends a form's fields as they are): copies_count (empty: the fleet's default) and
 * copies_every_s (empty: 60 s).
 */
export class ConsoleCreateVmRequest extends CreateVmRequest {
  @ValidateIf(
    (request: ConsoleCreateVmRequest) =>
      request.copies_count !== undefined || request.copies_every_s !== undefined,
  )
  @Max(MAX_VM_COPIES)
  @Min(0)
  @IsInt({
    message: 'copies_count must be a whole number from 0 to 2, and is needed with copies_every_s',
  })
  copies_count?: number;

  @IsOptional()
  @Max(MAX_COPY_EVERY_S)
  @Min(MIN_COPY_EVERY_S)
  @IsInt()
  copies_every_s?: number;
}

/** The form's copy interval when only a count is chosen. */
export const CONSOLE_DEFAULT_COPY_EVERY_S = 60;

/** The API's CreateVmRequest the form's fields make: copies as one policy, or absent. */
export function createRequestOf(form: ConsoleCreateVmRequest): CreateVmRequest {
  const { copies_count, copies_every_s, ...request } = form;
  if (copies_count === undefined) return request;
  return {
    ...request,
    copies: { count: copies_count, every_s: copies_every_s ?? CONSOLE_DEFAULT_COPY_EVERY_S },
  };
}

/** What an action answers the page: the outcome in the controller's words. */
export interface Outcome {
  message: string;
}
