import {
  decodeKeyValue,
  encodeCompare,
  encodeOp,
  fromBase64,
  prefixEnd,
  toBase64,
} from './etcd-wire';

describe('the etcd JSON gateway encoding', () => {
  it('gives the end of a prefix range: the last byte raised', () => {
    expect(prefixEnd('ppn-fleet/vm/')).toBe('ppn-fleet/vm0');
    expect(prefixEnd('a')).toBe('b');
  });

  it('encodes ops with base64 keys and values and 64-bit numbers as strings', () => {
    expect(encodeOp({ put: { key: 'ppn-fleet/node/n1', value: 'é\n{}', lease: '42' } })).toEqual({
      request_put: { key: toBase64('ppn-fleet/node/n1'), value: toBase64('é\n{}'), lease: '42' },
    });
    expect(
      encodeOp({ range: { key: 'ppn-fleet/', rangeEnd: prefixEnd('ppn-fleet/'), revision: 7 } }),
    ).toEqual({
      request_range: {
        key: toBase64('ppn-fleet/'),
        range_end: toBase64('ppn-fleet0'),
        revision: '7',
      },
    });
    expect(encodeOp({ deleteRange: { key: 'k' } })).toEqual({
      request_delete_range: { key: toBase64('k') },
    });
  });

  it('encodes compares on a key or a whole range', () => {
    expect(
      encodeCompare({
        key: 'ppn-fleet/vm/v1/',
        rangeEnd: prefixEnd('ppn-fleet/vm/v1/'),
        target: 'MOD',
        result: 'LESS',
        revision: 12,
      }),
    ).toEqual({
      key: toBase64('ppn-fleet/vm/v1/'),
      range_end: toBase64('ppn-fleet/vm/v10'),
      target: 'MOD',
      result: 'LESS',
      mod_revision: '12',
    });
    expect(encodeCompare({ key: 'k', target: 'CREATE', result: 'EQUAL', revision: 0 })).toEqual({
      key: toBase64('k'),
      target: 'CREATE',
      result: 'EQUAL',
      create_revision: '0',
    });
  });

  it('decodes a key-value, its left-out zeros as 0 and an empty value', () => {
    expect(
      decodeKeyValue({ key: toBase64('k'), mod_revision: '9', create_revision: '3', lease: '5' }),
    ).toEqual({ key: 'k', value: '', modRevision: 9, createRevision: 3, lease: '5' });
    expect(decodeKeyValue({ key: toBase64('k'), value: toBase64('v') })).toMatchObject({
      value: 'v',
      modRevision: 0,
      lease: '0',
    });
    expect(fromBase64(undefined)).toBe('');
  });
});
