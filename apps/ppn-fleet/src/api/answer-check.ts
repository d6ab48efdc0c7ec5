import { ClassConstructor, plainToInstance } from 'class-transformer';
import { ValidationError, ValidatorOptions, validateSync } from 'class-validator';

/**
 * How an answer's shape is checked: against the wire class the controller answers with
 * (libs/fleet-domain), by the same class-validator rules its own input pipe applies, so that a
 * `201 {}`, a listing that is not an array or an unknown state is refused at once, rather than
 * printed as `undefined` or polled for minutes by --wait. Gives where the answer is not as the
 * API gives it (a field's path, `answer` for the whole), or undefined.
 */
export type AnswerShape = (data: unknown) => string | undefined;

const OPTIONS: ValidatorOptions = { forbidUnknownValues: true, stopAtFirstError: true };

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The path of the first field at fault: property names are the wire class's own (validation
 * never reports a field the class does not declare), list positions are numbers, so nothing of
 * the answer's text gets into a message.
 */
function faultPath(errors: ValidationError[], parent: string): string | undefined {
  const [error] = errors;
  if (!error) return undefined;
  const path = parent === '' ? error.property : `${parent}.${error.property}`;
  return error.children?.length ? (faultPath(error.children, path) ?? path) : path;
}

function faultOf(wireClass: ClassConstructor<object>, value: unknown, at: string) {
  if (!isObject(value)) return at === '' ? 'answer' : at;
  return faultPath(validateSync(plainToInstance(wireClass, value), OPTIONS), at);
}

/** An answer that is one `wireClass`. */
export function shapeOf(wireClass: ClassConstructor<object>): AnswerShape {
  return (data) => faultOf(wireClass, data, '');
}

/** An answer that is a list of `wireClass`. */
export function listOf(wireClass: ClassConstructor<object>): AnswerShape {
  return (data) => {
    if (!Array.isArray(data)) return 'answer';
    for (let index = 0; index < data.length; index++) {
      const fault = faultOf(wireClass, data[index], String(index));
      if (fault !== undefined) return fault;
    }
    return undefined;
  };
}
