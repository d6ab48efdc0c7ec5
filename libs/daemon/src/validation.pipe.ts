import { BadRequestException, ValidationError, ValidationPipe } from '@nestjs/common';

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

/**
 * The one validation setup of both daemons: defaults applied, unknown fields stripped (a newer
 * agent's extra heartbeat fields must not stop it enrolling), every bad field named in one message.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: false,
    stopAtFirstError: true,
    exceptionFactory: (errors) =>
      new BadRequestException(describeValidationErrors(errors).join('; ')),
  });
}
