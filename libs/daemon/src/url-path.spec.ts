import { isPathOf } from './url-path';

describe('isPathOf', () => {
  it.each([
    '/v1/nodes/heartbeat',
    '/v1/nodes/heartbeat?x=1',
    '/v1/nodes/heartbeat?',
    '/v1/nodes/heartbeats',
    '/v1/nodes/heartbeat/',
    '/v1/nodes',
    '',
    '/v1/nodes/heartbeat#a',
  ])('says of %j what split("?")[0] says', (url) => {
    expect(isPathOf(url, '/v1/nodes/heartbeat')).toBe(url.split('?')[0] === '/v1/nodes/heartbeat');
  });

  it('takes no URL as another path', () => {
    expect(isPathOf(undefined, '/v1/nodes/heartbeat')).toBe(false);
  });
});
