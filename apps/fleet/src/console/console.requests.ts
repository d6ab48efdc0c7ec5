import { Transform, Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { IsFleetId } from '@app/fleet-domain';

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
