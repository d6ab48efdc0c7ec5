import {
  effectiveAddress,
  ipAddressBytes,
  isLinkLocalAddress,
  isLoopbackAddress,
  isUnicastAddress,
} from './ip-address';

describe('ipAddressBytes', () => {
  it.each([
    ['10.0.0.1', [10, 0, 0, 1]],
    ['0.0.0.0', [0, 0, 0, 0]],
    ['255.255.255.255', [255, 255, 255, 255]],
    ['::1', [...new Array<number>(15).fill(0), 1]],
    ['0:0:0:0:0:0:0:1', [...new Array<number>(15).fill(0), 1]],
    ['fd00::1:2', [0xfd, 0, ...new Array<number>(10).fill(0), 0, 1, 0, 2]],
    ['::ffff:10.1.2.3', [...new Array<number>(10).fill(0), 255, 255, 10, 1, 2, 3]],
    ['1:2:3:4:5:6:7::', [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0]],
  ])('reads %s', (text, bytes) => {
    expect(ipAddressBytes(text)).toEqual(bytes);
  });

  it.each([
    '256.0.0.1',
    '010.0.0.1',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.4.',
    '.1.2.3',
    '1..2.3',
    '1234.0.0.1',
    '00.1.2.3',
    '1.2.3.4\n',
    ' 1.2.3.4',
    '1.2.3.٤',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '::12345',
    '1.2.3.4::',
    'fe80::1%eth0',
    '',
  ])('refuses %s', (text) => {
    expect(ipAddressBytes(text)).toBeUndefined();
  });
});

describe('every spelling of an address is judged as the address it is', () => {
  // Each of these names 169.254.169.254, cloud metadata: never a node's wg_ip.
  it.each([
    '169.254.169.254',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '0::ffff:a9fe:a9fe',
    '0:0:0:0:0:ffff:a9fe:a9fe',
    '0000:0000:0000:0000:0000:FFFF:A9FE:A9FE',
    '::169.254.169.254',
    '::a9fe:a9fe',
    '::ffff:0:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    'fe80::1',
    'FEBF::1',
  ])('%s is link-local', (text) => {
    expect(isLinkLocalAddress(text)).toBe(true);
  });

  // Each of these is unspecified, multicast or broadcast: it would bind every interface.
  it.each([
    '0.0.0.0',
    '::',
    '0::0',
    '0:0:0:0:0:0:0:0',
    '::ffff:0.0.0.0',
    '::ffff:0:0',
    '0:0:0:0:0:ffff:0:0',
    '::ffff:e000:1',
    '0:0:0:0:0:ffff:ffff:ffff',
    '::255.255.255.255',
    'ff02::1',
    'FF05::2',
    '224.0.0.1',
    '255.255.255.255',
  ])('%s is not a unicast address', (text) => {
    expect(isUnicastAddress(text)).toBe(false);
  });

  it.each(['10.201.0.2', '127.0.0.1', '::1', 'fd00::2', '::ffff:10.0.0.2', '0:0:0:0:0:ffff:a00:2'])(
    '%s is a unicast address a node may own',
    (text) => {
      expect(isUnicastAddress(text)).toBe(true);
    },
  );

  it('names the IPv4 address a mapped or compatible spelling carries', () => {
    expect(effectiveAddress('0:0:0:0:0:ffff:a00:2')).toEqual({ family: 4, bytes: [10, 0, 0, 2] });
    expect(effectiveAddress('::10.0.0.2')).toEqual({ family: 4, bytes: [10, 0, 0, 2] });
    expect(effectiveAddress('::1')?.family).toBe(6);
  });
});

describe('isLoopbackAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '::1',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
    '::127.0.0.2',
  ])('names the machine itself: %s', (text) => expect(isLoopbackAddress(text)).toBe(true));

  it.each(['10.8.0.1', '128.0.0.1', '::2', 'fd00::1', '::ffff:10.0.0.1', 'localhost'])(
    'names another machine (or is no address): %s',
    (text) => expect(isLoopbackAddress(text)).toBe(false),
  );
});
