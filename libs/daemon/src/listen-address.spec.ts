import { formatListenAddress, parseListenAddress } from './listen-address';

describe('parseListenAddress', () => {
  it.each([
    ['127.0.0.1:9100', { host: '127.0.0.1', port: 9100 }],
    ['10.8.0.1:1', { host: '10.8.0.1', port: 1 }],
    ['[::1]:65535', { host: '::1', port: 65535 }],
    ['[fd00:8::21]:9101', { host: 'fd00:8::21', port: 9101 }],
  ])('takes %s', (value, address) => {
    expect(parseListenAddress(value)).toEqual(address);
    expect(formatListenAddress(address)).toBe(value);
  });

  it.each([
    '9100',
    ':9100',
    'localhost:9100',
    '127.0.0.1',
    '127.0.0.1:0',
    '127.0.0.1:65536',
    '256.0.0.1:9100',
    '::1:9100',
    '[127.0.0.1]:9100',
    'http://127.0.0.1:9100',
    '127.0.0.1:9100/metrics',
    // Every interface, or none of this host alone: /metrics has no token.
    '0.0.0.0:9100',
    '[::]:9100',
    '224.0.0.1:9100',
    '255.255.255.255:9100',
  ])('refuses %s', (value) => {
    expect(parseListenAddress(value)).toBeUndefined();
  });
});
