import { hostNameOf, isListenerHost, isSameOrigin } from './ops-listener.http';

describe('same origin', () => {
  it.each([
    [
      { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:9206', host: '127.0.0.1:9206' },
      true,
    ],
    [{ host: '127.0.0.1:9206' }, true],
    [{ 'sec-fetch-site': 'cross-site', host: '127.0.0.1:9206' }, false],
    [{ 'sec-fetch-site': 'same-site', host: '127.0.0.1:9206' }, false],
    [{ origin: 'http://evil.example', host: '127.0.0.1:9206' }, false],
    [{ origin: 'null', host: '127.0.0.1:9206' }, false],
  ])('%j: %s', (headers, expected) => {
    expect(isSameOrigin(headers)).toBe(expected);
  });
});

describe('the Host header', () => {
  it.each([
    ['127.0.0.1:9206', '127.0.0.1'],
    ['LOCALHOST.:9206', 'localhost'],
    ['[::1]:9206', '::1'],
    ['::1', '::1'],
    ['fleet.example.org', 'fleet.example.org'],
  ])('%s names %s', (host, name) => {
    expect(hostNameOf(host)).toBe(name);
  });

  it.each([
    ['127.0.0.1:9206', '127.0.0.1', [], true],
    ['localhost:9206', '127.0.0.1', [], true],
    ['[::1]:9206', '::1', [], true],
    ['127.0.0.1:9206', '::ffff:127.0.0.1', [], true],
    ['10.8.0.1:9206', '10.8.0.1', [], true],
    ['rebind.attacker.example:9206', '127.0.0.1', [], false],
    ['localhost:9206', '10.8.0.1', [], false],
    ['10.8.0.2:9206', '10.8.0.1', [], false],
    ['fleet.example.org', '10.8.0.1', ['fleet.example.org'], true],
    [undefined, '127.0.0.1', [], false],
  ])('%s on %s (%j): %s', (host, local, extra, expected) => {
    expect(isListenerHost(host, local, extra)).toBe(expected);
  });
});
