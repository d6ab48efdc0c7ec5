import { Matches, ValidateBy, isIP } from 'class-validator';
import { CONTROL_CHARACTERS, isLinkLocalAddress, isUnicastAddress } from '@app/api-basics';

/** Node, VM, boot and tenant ids: safe in a URL path, a file name and a log line. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const ID_RULE = '1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';
export const ID_MAX_LENGTH = 128;

/** A VM type becomes the guest's hostname, so it follows hostname label rules. */
export const VM_TYPE_PATTERN = /^[A-Za-z0-9-]{1,63}$/;
export const VM_TYPE_RULE = '1-63 characters of A-Z a-z 0-9 -';

const CONTROL_CHARACTER = new RegExp(CONTROL_CHARACTERS.source, 'u');

/**
 * The same rule as an OpenAPI `pattern`, spelled for JSON Schema validators that read it
 * without Unicode property escapes: Cc, Zl, Zp and the format characters of the Basic
 * Multilingual Plane (the rare astral ones, such as tag characters, only the validator sees).
 */
export const NO_CONTROL_CHARACTERS_PATTERN =
  '^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb]*$';

/**
 * Characters of an IP address literal; validator's isIP also takes IPv6 zones (`fe80::1%eth0`),
 * which name an interface of the sender, not an address the controller can reach.
 */
const IP_LITERAL_CHARACTERS = /^[0-9A-Fa-f.:]+$/;
/** The longest IPv6 text form, IPv4-mapped: ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255. */
export const IP_LITERAL_MAX_LENGTH = 45;
export const IP_LITERAL_PATTERN = `^[0-9A-Fa-f.:]{2,${IP_LITERAL_MAX_LENGTH}}$`;

/** OpenAPI bounds of an id, spread into its @ApiProperty. */
export const ID_SCHEMA = { pattern: ID_PATTERN.source, maxLength: ID_MAX_LENGTH } as const;
export const VM_TYPE_SCHEMA = { pattern: VM_TYPE_PATTERN.source, maxLength: 63 } as const;

/** Validates a string property as a fleet id; the message names the property. */
export function IsFleetId(): PropertyDecorator {
  return Matches(ID_PATTERN, { message: `$property must be ${ID_RULE}` });
}

export function IsVmType(): PropertyDecorator {
  return Matches(VM_TYPE_PATTERN, { message: `$property must be ${VM_TYPE_RULE}` });
}

export function isPrintableText(value: unknown, maxLength: number): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= maxLength &&
    !CONTROL_CHARACTER.test(value)
  );
}

/** 1 to `maxLength` characters, none of them a control character (so never a second log line). */
export function IsPrintableText(maxLength: number): PropertyDecorator {
  return ValidateBy({
    name: 'isPrintableText',
    constraints: [maxLength],
    validator: {
      validate: (value: unknown) => isPrintableText(value, maxLength),
      defaultMessage: () =>
        `$property must be 1-${maxLength} characters without control or format characters`,
    },
  });
}

export function isIpAddressLiteral(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= IP_LITERAL_MAX_LENGTH &&
    IP_LITERAL_CHARACTERS.test(value) &&
    isIP(value) &&
    // An address an agent can own: the controller will call it, so nothing it could be aimed
    // at beyond one host (unspecified, multicast, broadcast) or cloud metadata (link-local).
    isUnicastAddress(value) &&
    !isLinkLocalAddress(value)
  );
}

/**
 * A unicast IPv4 or IPv6 address literal, nothing else: no zone, port, prefix, path or name;
 * not unspecified, multicast, broadcast or link-local.
 */
export function IsIpAddressLiteral(): PropertyDecorator {
  return ValidateBy({
    name: 'isIpAddressLiteral',
    validator: {
      validate: (value: unknown) => isIpAddressLiteral(value),
      defaultMessage: () =>
        '$property must be a unicast IPv4 or IPv6 address literal (no zone, port, prefix or name; not 0.0.0.0, ::, multicast, broadcast or link-local)',
    },
  });
}

/** Ids in code-unit order, the same in every store and on every machine (no locale). */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
