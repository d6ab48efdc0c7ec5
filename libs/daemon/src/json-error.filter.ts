import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import type { Response } from 'express';
import { excerpt } from './printable';

interface BodyParserError {
  type: string;
  status?: number;
  message: string;
}

function isBodyParserError(error: unknown): error is BodyParserError {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { type?: unknown }).type === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any constructor of an Error subclass
type ErrorClass = abstract new (...args: any[]) => Error;

/**
 * How an app's domain errors map to HTTP statuses: one table per app, read top to bottom,
 * the first class the error is an instance of wins. A status may depend on the error itself.
 */
export type DomainErrorStatuses = ReadonlyArray<
  readonly [ErrorClass, number | ((error: Error) => number)]
>;

/** The `error` of a body: the status's reason phrase, as Nest names it ("Not Found"). */
export function reasonPhrase(status: number): string | undefined {
  return HttpStatus[status]
    ?.toLowerCase()
    .split('_')
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join(' ');
}

/**
 * Every error leaves as JSON `{statusCode, error, message}`: the app's domain errors with the
 * status its table gives them, Nest's HTTP exceptions as they are, body-parser's (malformed
 * JSON, too large) with their status, anything else as a logged 500 that says nothing more.
 */
@Catch()
export class JsonErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpErrors');

  constructor(
    private readonly statuses: DomainErrorStatuses = [],
    /**
     * The realm of the bearer challenge a domain error's 401 gets (the guard sets its own): every
     * 401 carries WWW-Authenticate (RFC 9110), one a route answers after its own check too.
     */
    private readonly bearerRealm?: string,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    const body = this.body(exception);
    if (body.statusCode === 401 && this.bearerRealm && !response.hasHeader('WWW-Authenticate')) {
      response.setHeader(
        'WWW-Authenticate',
        `Bearer realm="${this.bearerRealm}", error="invalid_token"`,
      );
    }
    response.status(body.statusCode).json(body);
  }

  /** The JSON body `exception` is answered with; also what the OpenAPI documents show. */
  body(exception: unknown): { statusCode: number; error: string | undefined; message: string } {
    const { status, message } = this.describe(exception);
    return { statusCode: status, error: reasonPhrase(status), message };
  }

  private describe(exception: unknown): { status: number; message: string } {
    for (const [errorClass, status] of this.statuses) {
      if (exception instanceof errorClass) {
        return {
          status: typeof status === 'number' ? status : status(exception),
          message: exception.message,
        };
      }
    }
    if (exception instanceof HttpException) {
      const body = exception.getResponse();
      const message: unknown =
        typeof body === 'string' ? body : (body as { message?: unknown }).message;
      return {
        status: exception.getStatus(),
        message: Array.isArray(message)
          ? message.join('; ')
          : typeof message === 'string'
            ? message
            : exception.message,
      };
    }
    if (isBodyParserError(exception)) {
      if (exception.type === 'entity.too.large') {
        return { status: 413, message: 'request body is larger than 1 MiB' };
      }
      // Parser messages quote the request (a bit of the body, a header): shown printable, cut.
      if (exception.type === 'entity.parse.failed') {
        return {
          status: 400,
          message: `request body is not valid JSON: ${excerpt(exception.message, 200)}`,
        };
      }
      return { status: exception.status ?? 400, message: excerpt(exception.message, 300) };
    }
    this.logger.error(
      exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
    );
    return { status: 500, message: 'internal error' };
  }
}
