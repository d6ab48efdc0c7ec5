import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import type { Response } from 'express';
import { StoreUnavailableError } from './store-unavailable.error';

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

/**
 * Every error leaves as JSON `{statusCode, error, message}`: Nest's HTTP exceptions as they are,
 * body-parser's (malformed JSON, too large) with their status, anything else as a logged 500.
 */
@Catch()
export class JsonErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpErrors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    const { status, message } = this.describe(exception);
    response.status(status).json({
      statusCode: status,
      error: HttpStatus[status]
        ?.toLowerCase()
        .split('_')
        .map((word) => word[0].toUpperCase() + word.slice(1))
        .join(' '),
      message,
    });
  }

  private describe(exception: unknown): { status: number; message: string } {
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
    if (exception instanceof StoreUnavailableError) {
      return { status: 503, message: exception.message };
    }
    if (isBodyParserError(exception)) {
      if (exception.type === 'entity.too.large') {
        return { status: 413, message: 'request body is larger than 1 MiB' };
      }
      if (exception.type === 'entity.parse.failed') {
        return { status: 400, message: `request body is not valid JSON: ${exception.message}` };
      }
      return { status: exception.status ?? 400, message: exception.message };
    }
    this.logger.error(
      exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
    );
    return { status: 500, message: 'internal error' };
  }
}
