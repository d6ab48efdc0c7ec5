import {
  ArgumentMetadata,
  BadRequestException,
  Injectable,
  PipeTransform,
  ValidationError,
} from '@nestjs/common';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { ValidatorOptions, validate, validateSync } from 'class-validator';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { shapeInput, shapeListItem } from './input-shape';
import { excerpt } from './printable';
import { memoizeValidationMetadata } from './validation-metadata-memo';

memoizeValidationMetadata();

/** Problems one 400 lists; the others are counted, so an answer stays a few hundred bytes. */
export const PROBLEMS_LISTED = 5;
const PROBLEM_MAX_LENGTH = 300;

/** Validating a long list gives other requests a turn at least this often. */
const VALIDATION_SLICE_MS = 5;

/**
 * Defaults applied, unknown fields stripped (a newer agent's extra heartbeat fields must not
 * stop it enrolling), one problem per field.
 */
const VALIDATOR_OPTIONS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: false,
  forbidUnknownValues: true,
  stopAtFirstError: true,
};

/**
 * The top-level fields of `value` that `wireClass`'s rules refuse, judged at once by the same
 * rules and options as the wire's input: for a record the agent reads back from its own files (a
 * VM's sidecar), which a heartbeat must carry as the controller will take it.
 */
export function refusedFields(wireClass: ClassConstructor<object>, value: object): string[] {
  const instance = plainToInstance(wireClass, value);
  return validateSync(instance, VALIDATOR_OPTIONS).map(({ property }) => property);
}

/** Flattens class-validator errors to "vms.0.ram_alloc_mb must be ..." messages. */
export function describeValidationErrors(errors: ValidationError[], parent = ''): string[] {
  const messages: string[] = [];
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    for (const constraint of Object.values(error.constraints ?? {})) {
      messages.push(
        constraint.startsWith(error.property)
          ? path + constraint.slice(error.property.length)
          : `${path}: ${constraint}`,
      );
    }
    if (error.children?.length) messages.push(...describeValidationErrors(error.children, path));
  }
  return messages;
}

/** The first few problems, each shortened, then how many more there were. */
export function summarizeProblems(problems: readonly string[]): string {
  const listed = problems
    .slice(0, PROBLEMS_LISTED)
    .map((problem) => excerpt(problem, PROBLEM_MAX_LENGTH));
  const more = problems.length - listed.length;
  return more > 0 ? `${listed.join('; ')}; and ${more} more` : listed.join('; ');
}

export interface ValidatedInput<T> {
  /** Set when there is no problem. */
  instance?: T;
  problems: string[];
}

/**
 * Makes a valid `wireClass` instance of an input, or says every problem with it. The input is
 * first cut to its declared shape (shapeInput); then the items of a top-level list of objects
 * (a heartbeat's VMs) are shaped, transformed and validated one at a time, giving the event
 * loop a turn every few ms: validating 1,024 VMs in one go blocked every other request for
 * 100-250 ms.
 */
export async function validateInput<T extends object>(
  wireClass: ClassConstructor<T>,
  input: unknown,
  source: 'body' | 'query' | 'path',
): Promise<ValidatedInput<T>> {
  const shaped = shapeInput(wireClass, input, source, true);
  if (shaped.problems.length > 0) return { problems: shaped.problems };
  const instance = plainToInstance(wireClass, shaped.value);
  const problems = describeValidationErrors(await validate(instance, VALIDATOR_OPTIONS));
  let sliceStartedAt = performance.now();
  for (const { field, items } of shaped.lists) {
    const itemClass = field.nested as ClassConstructor<object>;
    const transformed: object[] = [];
    for (let index = 0; index < items.length; index++) {
      const at = `${field.name}.${index}`;
      const shapeProblems: string[] = [];
      const item = plainToInstance(
        itemClass,
        shapeListItem(itemClass, items[index], at, shapeProblems),
      );
      if (shapeProblems.length > 0) problems.push(...shapeProblems);
      else problems.push(...describeValidationErrors(await validate(item, VALIDATOR_OPTIONS), at));
      transformed.push(item);
      if (performance.now() - sliceStartedAt > VALIDATION_SLICE_MS) {
        await nextTurn();
        sliceStartedAt = performance.now();
      }
    }
    (instance as Record<string, unknown>)[field.name] = transformed;
  }
  return problems.length > 0 ? { problems } : { instance, problems };
}

const NATIVE_TYPES = new Set<unknown>([String, Boolean, Number, Array, Object, Buffer, Date]);

const SOURCES = { body: 'body', query: 'query', param: 'path' } as const;

/**
 * The one validation pipe of both daemons: every body, query and path parameter typed with a
 * wire class is shaped, transformed and validated by validateInput; a 400 names the first few
 * fields at fault and counts the rest.
 */
@Injectable()
export class BoundedValidationPipe implements PipeTransform<unknown, Promise<unknown>> {
  async transform(value: unknown, { metatype, type }: ArgumentMetadata): Promise<unknown> {
    if (type === 'custom' || !metatype || NATIVE_TYPES.has(metatype)) return value;
    const { instance, problems } = await validateInput(
      metatype as ClassConstructor<object>,
      value,
      SOURCES[type],
    );
    if (problems.length > 0) throw new BadRequestException(summarizeProblems(problems));
    return instance;
  }
}

export function createValidationPipe(): BoundedValidationPipe {
  return new BoundedValidationPipe();
}
