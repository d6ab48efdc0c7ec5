import { BadRequestException, ExecutionContext, createParamDecorator } from '@nestjs/common';
import type { Request } from 'express';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
} from '@app/fleet-domain';

/**
 * The request's `Idempotency-Key` header, checked (undefined when absent); anything else,
 * including the header given twice, is a 400 naming the header.
 */
export const IdempotencyKey = createParamDecorator(
  (_data: unknown, context: ExecutionContext): string | undefined => {
    const value = context.switchToHttp().getRequest<Request>().headers['idempotency-key'];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
      throw new BadRequestException(
        `${IDEMPOTENCY_KEY_HEADER} header must be ${IDEMPOTENCY_KEY_RULE}`,
      );
    }
    return value;
  },
);
