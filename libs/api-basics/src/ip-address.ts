/**
 * IP address literals judged as the address they name, not as they are spelled: an IPv4
 * address may hide inside IPv6 (`::ffff:a9fe:a9fe`, `0:0:0:0:0:ffff:169.254.169.254`,
 * `::169.254.169.254`), and one IPv6 address has many spellings (`::`, `0::0`, `0:0:0:0:0:0:0:0`).
 */

const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;
const DOT = 46;
const DIGIT_0 = 48;
const DIGIT_9 = 57;

/**
 * Four dotted decimal bytes, each 1-3 digits; read char by char, as every heartbeat's address
 * is (a regular expression and its match arrays cost more than the rest of the check).
 */
function ipv4Bytes(text: string): number[] | undefined {
  const bytes: number[] = [];
  let value = 0;
  let digits = 0;
  for (let index = 0; index <= text.length; index++) {
    const code = index === text.length ? DOT : text.charCodeAt(index);
    if (code === DOT) {
      if (digits === 0 || value > 255 || bytes.length === 4) return undefined;
      bytes.push(value);
      value = 0;
      digits = 0;
    } else if (code >= DIGIT_0 && code <= DIGIT_9) {
      // A leading zero reads as octal to some resolvers (010 = 8): refuse the ambiguity.
      if (digits === 1 && value === 0) return undefined;
      if (++digits > 3) return undefined;
      value = value * 10 + (code - DIGIT_0);
    } else {
      return undefined;
    }
  }
  return bytes.length === 4 ? bytes : undefined;
}

/** The groups of one side of `::`, each two bytes; a trailing dotted IPv4 counts as two. */
function groupBytes(side: string, mayEndInIpv4: boolean): number[] | undefined {
  if (side === '') return [];
  const groups = side.split(':');
  const bytes: number[] = [];
  for (const [index, group] of groups.entries()) {
    if (mayEndInIpv4 && index === groups.length - 1 && group.includes('.')) {
      const ipv4 = ipv4Bytes(group);
      if (!ipv4) return undefined;
      bytes.push(...ipv4);
    } else if (HEX_GROUP.test(group)) {
      const value = parseInt(group, 16);
      bytes.push(value >> 8, value & 255);
    } else {
      return undefined;
    }
  }
  return bytes;
}

function ipv6Bytes(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  if (halves.length === 1) {
    const bytes = groupBytes(text, true);
    return bytes?.length === 16 ? bytes : undefined;
  }
  const head = groupBytes(halves[0], false);
  const tail = groupBytes(halves[1], true);
  if (!head || !tail || head.length + tail.length > 14) return undefined;
  return [...head, ...new Array<number>(16 - head.length - tail.length).fill(0), ...tail];
}

/** The 4 (IPv4) or 16 (IPv6) bytes an address literal names; undefined when it is none. */
export function ipAddressBytes(text: string): number[] | undefined {
  return text.includes(':') ? ipv6Bytes(text) : ipv4Bytes(text);
}

const zero = (bytes: number[], from: number, to: number): boolean =>
  bytes.slice(from, to).every((byte) => byte === 0);

/**
 * The IPv4 address an IPv6 address stands for, where a host or a translator would reach it over
 * IPv4: mapped (::ffff:0:0/96), translated (::ffff:0:0:0/96), compatible (::/96 but :: and
 * ::1) and the well-known NAT64 prefix (64:ff9b::/96).
 */
function embeddedIpv4(bytes: number[]): number[] | undefined {
  const last4 = bytes.slice(12);
  const mapped = zero(bytes, 0, 10) && bytes[10] === 255 && bytes[11] === 255;
  const translated =
    zero(bytes, 0, 8) && bytes[8] === 255 && bytes[9] === 255 && zero(bytes, 10, 12);
  const compatible = zero(bytes, 0, 12) && !zero(bytes, 12, 15);
  const nat64 = bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b;
  return mapped || translated || compatible || (nat64 && zero(bytes, 4, 12)) ? last4 : undefined;
}

/** What an address literal names: the IPv4 address it carries, or the IPv6 address itself. */
export function effectiveAddress(text: string): { family: 4 | 6; bytes: number[] } | undefined {
  const bytes = ipAddressBytes(text);
  if (!bytes) return undefined;
  if (bytes.length === 4) return { family: 4, bytes };
  const ipv4 = embeddedIpv4(bytes);
  return ipv4 ? { family: 4, bytes: ipv4 } : { family: 6, bytes };
}

/**
 * An address one host can own and listen on alone: not unspecified (0.0.0.0, ::, which would
 * put a listener on every interface), not multicast, not the IPv4 broadcast address; judged
 * on the address named, in any spelling.
 */
export function isUnicastAddress(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const address = effectiveAddress(value);
  if (!address) return false;
  const { family, bytes } = address;
  if (family === 4) {
    const [first] = bytes;
    const broadcast = bytes.every((byte) => byte === 255);
    return first !== 0 && !(first >= 224 && first <= 239) && !broadcast;
  }
  return !zero(bytes, 0, 16) && bytes[0] !== 0xff;
}

/** Link-local (169.254.0.0/16, fe80::/10), in any spelling: home to cloud metadata. */
export function isLinkLocalAddress(value: string): boolean {
  const address = effectiveAddress(value);
  if (!address) return false;
  const { family, bytes } = address;
  if (family === 4) return bytes[0] === 169 && bytes[1] === 254;
  return bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80;
}

/**
 * Loopback (127.0.0.0/8, ::1), in any spelling (`::ffff:127.0.0.1` too): an address that
 * names whichever machine uses it, so from the controller its own services.
 */
export function isLoopbackAddress(value: string): boolean {
  const address = effectiveAddress(value);
  return address !== undefined && isLoopbackBytes(address);
}

/** isLoopbackAddress for an address parsed already (effectiveAddress). */
export function isLoopbackBytes({ family, bytes }: { family: 4 | 6; bytes: number[] }): boolean {
  if (family === 4) return bytes[0] === 127;
  return zero(bytes, 0, 15) && bytes[15] === 1;
}
