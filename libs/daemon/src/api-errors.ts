import {
  BadRequestException,
  UnsupportedMediaTypeException,
  applyDecorators,
} from '@nestjs/common';
import { ApiResponse, ErrorBody } from '@app/api-basics';
import { DomainErrorStatuses, JsonErrorFilter } from './json-error.filter';
import { findCostlyJson } from './json-limits';

/**
 * One way an operation fails: when, in words for the reader of the document, and the exception
 * the daemon then throws. The app's own error filter turns that exception into the example, so
 * the status and body an OpenAPI document shows are the ones the daemon sends. `name` keys the
 * example among others of the same status.
 */
export interface ErrorCase {
  name: string;
  when: string;
  error: unknown;
}

/** A request field or parameter the validation pipe refuses: 400 with the message it gives. */
export function invalidInput(when: string, message: string): ErrorCase {
  return { name: 'invalid-input', when, error: new BadRequestException(message) };
}

/** An error as body-parser raises it; the filter tells them apart by `type`. */
function bodyParserError(type: string, status: number, message: string): Error {
  return Object.assign(new Error(message), { type, status });
}

/** How any route that reads a JSON body can refuse it before the route sees it. */
export const BODY_ERRORS: readonly ErrorCase[] = [
  {
    name: 'invalid-json',
    when: 'The body is not valid JSON.',
    error: bodyParserError(
      'entity.parse.failed',
      400,
      "Expected property name or '}' in JSON at position 1",
    ),
  },
  {
    name: 'too-large',
    when: 'The body is larger than 1 MiB.',
    error: bodyParserError('entity.too.large', 413, 'request entity too large'),
  },
  {
    name: 'encoded',
    when: 'The body comes with a Content-Encoding other than identity: the daemons decode nothing.',
    error: new UnsupportedMediaTypeException(
      'Content-Encoding gzip is not supported: send the body unencoded',
    ),
  },
  {
    name: 'not-json',
    when: 'The body is not sent as Content-Type: application/json.',
    error: new UnsupportedMediaTypeException(
      'Content-Type text/plain is not supported: send application/json',
    ),
  },
  {
    name: 'too-costly',
    when: 'The body nests or holds more than any valid request could (depth, values, field names).',
    error: bodyParserError(
      'entity.too.costly',
      400,
      `request body ${findCostlyJson(Buffer.from(`{"vms":${'['.repeat(40)}`)) ?? ''}`,
    ),
  },
];

/**
 * Declares every error status an operation (or each operation of a controller) answers, each
 * with its own example: the body the app's filter, configured with `statuses`, sends for that
 * case's exception. Several cases of one status become named examples of one response.
 */
export function ApiErrors(
  statuses: DomainErrorStatuses,
  ...cases: readonly ErrorCase[]
): MethodDecorator & ClassDecorator {
  const filter = new JsonErrorFilter(statuses);
  const byStatus = new Map<
    number,
    Array<{ name: string; when: string; body: ReturnType<typeof filter.body> }>
  >();
  for (const { name, when, error } of cases) {
    const body = filter.body(error);
    if (body.statusCode === 500 && body.message === 'internal error') {
      throw new Error(`ApiErrors: the daemon maps no status to the error of "${when}"`);
    }
    const others = byStatus.get(body.statusCode) ?? [];
    if (others.some((other) => other.name === name)) {
      throw new Error(`ApiErrors: two examples of status ${body.statusCode} are named ${name}`);
    }
    byStatus.set(body.statusCode, [...others, { name, when, body }]);
  }
  return applyDecorators(
    ...[...byStatus].map(([status, examples]) => {
      if (examples.length === 1) {
        return ApiResponse({
          status,
          type: ErrorBody,
          description: examples[0].when,
          example: examples[0].body,
        });
      }
      return ApiResponse({
        status,
        type: ErrorBody,
        description: examples.map(({ when }) => `- ${when}`).join('\n'),
        examples: Object.fromEntries(
          examples.map(({ name, when, body }) => [name, { summary: when, value: body }]),
        ),
      });
    }),
  );
}
