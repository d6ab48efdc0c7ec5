/**
 * What a JSON body may hold before it is parsed. JSON.parse's cost grows with the values,
 * arrays, objects and distinct field names in a body far more than with its bytes: 1 MiB of
 * nested arrays or of distinct names took 100-400 ms to parse, 1 MiB of zeros 15-40 ms, blocking
 * every other client meanwhile. Within these limits any body up to 1 MiB parses in a few ms,
 * and the largest valid heartbeat fits (1 MiB of it holds at most about 100,000 values and
 * 23,000 arrays and objects, with about 20 names).
 */
export const JSON_LIMITS = {
  /** Arrays and objects inside each other: a heartbeat needs 5. */
  maxDepth: 32,
  /** Arrays and objects in one body. */
  maxContainers: 32_768,
  /** Values in one body: array items and object members. */
  maxValues: 131_072,
  /** Different field names in one body. */
  maxDistinctNames: 1_024,
} as const;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Where the string opened at `open` closes (past the end when it does not). */
function endOfString(bytes: Buffer, open: number): number {
  for (let close = bytes.indexOf(QUOTE, open + 1); close !== -1;) {
    let backslashes = 0;
    while (bytes[close - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return close;
    close = bytes.indexOf(QUOTE, close + 1);
  }
  return bytes.length;
}

/**
 * One pass over the raw bytes, before any parsing: says how the text exceeds JSON_LIMITS, naming
 * the top-level field it happened under, or returns undefined. It does not check that the text
 * is JSON (JSON.parse does, next); whatever the bytes, it stops within one pass.
 */
export function findCostlyJson(text: Uint8Array): string | undefined {
  const { maxDepth, maxContainers, maxValues, maxDistinctNames } = JSON_LIMITS;
  const bytes = Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  const isObject: boolean[] = [];
  const names = new Set<number>();
  let depth = 0;
  let containers = 0;
  // Every value but the first of each array or object follows a comma.
  let values = 0;
  let expectName = false;
  let field = '';
  const under = (): string => (field ? ` (under field ${JSON.stringify(field)})` : '');
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      const open = i;
      i = endOfString(bytes, open);
      if (!expectName) continue;
      expectName = false;
      // Names are told apart by a hash: a collision only lets one more name through.
      let hash = FNV_OFFSET;
      for (let at = open + 1; at < i; at++) hash = Math.imul(hash ^ bytes[at], FNV_PRIME);
      names.add(hash >>> 0);
      if (names.size > maxDistinctNames) {
        return `uses more than ${maxDistinctNames} different field names`;
      }
      if (depth === 1) field = bytes.toString('utf8', open + 1, Math.min(i, open + 65));
      continue;
    }
    if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      depth++;
      containers++;
      if (depth > maxDepth) return `nests arrays and objects more than ${maxDepth} deep${under()}`;
      if (containers > maxContainers) {
        return `holds more than ${maxContainers} arrays and objects${under()}`;
      }
      isObject[depth] = byte === OPEN_OBJECT;
      expectName = byte === OPEN_OBJECT;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      if (depth > 0) depth--;
      expectName = false;
    } else if (byte === COMMA) {
      expectName = isObject[depth] === true;
      if (++values + containers > maxValues) return `holds more than ${maxValues} values${under()}`;
    }
  }
  return undefined;
}
