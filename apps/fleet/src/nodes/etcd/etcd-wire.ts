/** etcd's v3 JSON gateway's forms: keys and values in base64, ranges, ops and compares of a txn. */

export interface EtcdKeyValue {
  key: string;
  value: string;
  modRevision: number;
  createRevision: number;
  lease: string;
}

export type EtcdCompare = {
  key: string;
  /** Compares every key in [key, rangeEnd) (none there: compared as revision 0). */
  rangeEnd?: string;
  target: 'MOD' | 'CREATE';
  result: 'EQUAL' | 'LESS' | 'GREATER';
  revision: number;
};

export type EtcdOp =
  | {
      range: {
        key: string;
        rangeEnd?: string;
        revision?: number;
        keysOnly?: boolean;
        /** Only keys last changed at or after this revision. */
        minModRevision?: number;
      };
    }
  | { put: { key: string; value: string; lease?: string } }
  | { deleteRange: { key: string; rangeEnd?: string } };

export interface EtcdTxnResult {
  succeeded: boolean;
  revision: number;
  /** One per op run: the keys a range read (empty for a put or a delete). */
  ranges: EtcdKeyValue[][];
}

export const toBase64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
export const fromBase64 = (text: string | undefined): string =>
  Buffer.from(text ?? '', 'base64').toString('utf8');

/** The end of the range of every key that starts with `prefix` (etcd's "prefix" range end). */
export function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix, 'utf8');
  for (let index = bytes.length - 1; index >= 0; index--) {
    if (bytes[index] < 0xff) {
      const end = bytes.subarray(0, index + 1);
      end[index]++;
      return end.toString('latin1');
    }
  }
  return '\0';
}

/** The range end in base64, from its bytes (`prefixEnd` gives latin1). */
function rangeEndBase64(rangeEnd: string): string {
  return Buffer.from(rangeEnd, 'latin1').toString('base64');
}

/** A gateway reply's key-value, decoded (absent numbers are 0: the gateway leaves zeros out). */
export function decodeKeyValue(raw: unknown): EtcdKeyValue {
  const kv = (raw ?? {}) as Record<string, unknown>;
  const text = (field: string) => (typeof kv[field] === 'string' ? kv[field] : undefined);
  return {
    key: fromBase64(text('key')),
    value: fromBase64(text('value')),
    modRevision: Number(kv.mod_revision ?? 0),
    createRevision: Number(kv.create_revision ?? 0),
    lease: typeof kv.lease === 'string' || typeof kv.lease === 'number' ? String(kv.lease) : '0',
  };
}

/** An op as the gateway takes it. */
export function encodeOp(op: EtcdOp): Record<string, unknown> {
  if ('range' in op) {
    const { key, rangeEnd, revision, keysOnly, minModRevision } = op.range;
    return {
      request_range: {
        key: toBase64(key),
        ...(rangeEnd !== undefined && { range_end: rangeEndBase64(rangeEnd) }),
        ...(revision !== undefined && { revision: String(revision) }),
        ...(keysOnly && { keys_only: true }),
        ...(minModRevision !== undefined && { min_mod_revision: String(minModRevision) }),
      },
    };
  }
  if ('put' in op) {
    const { key, value, lease } = op.put;
    return {
      request_put: { key: toBase64(key), value: toBase64(value), ...(lease && { lease }) },
    };
  }
  const { key, rangeEnd } = op.deleteRange;
  return {
    request_delete_range: {
      key: toBase64(key),
      ...(rangeEnd !== undefined && { range_end: rangeEndBase64(rangeEnd) }),
    },
  };
}

export function encodeCompare(compare: EtcdCompare): Record<string, unknown> {
  return {
    key: toBase64(compare.key),
    ...(compare.rangeEnd !== undefined && { range_end: rangeEndBase64(compare.rangeEnd) }),
    target: compare.target,
    result: compare.result,
    [compare.target === 'MOD' ? 'mod_revision' : 'create_revision']: String(compare.revision),
  };
}
