import { Matches } from 'class-validator';

/** Node, VM, boot and tenant ids: safe in a URL path, a file name and a log line. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const ID_RULE = '1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';

/** A VM type becomes the guest's hostname, so it follows hostname label rules. */
export const VM_TYPE_PATTERN = /^[A-Za-z0-9-]{1,63}$/;
export const VM_TYPE_RULE = '1-63 characters of A-Z a-z 0-9 -';

/** Validates a string property as a fleet id; the message names the property. */
export function IsFleetId(): PropertyDecorator {
  return Matches(ID_PATTERN, { message: `$property must be ${ID_RULE}` });
}

export function IsVmType(): PropertyDecorator {
  return Matches(VM_TYPE_PATTERN, { message: `$property must be ${VM_TYPE_RULE}` });
}
