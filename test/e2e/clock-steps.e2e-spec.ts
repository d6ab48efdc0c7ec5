import request from 'supertest';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat } from '../support/heartbeats';

const HOUR_MS = 3_600_000;

/**
 * The controller on its in-memory store's own clock, with the machine's clocks faked: jest
 * moves Date (the wall clock, which setSystemTime steps either way) and performance.now()
 * (which only advances). Timers stay real, so the app serves as usual.
 */
describe('fleet controller: the wall clock steps', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    jest.useFakeTimers({
      now: Date.UTC(2026, 7, 6, 12),
      doNotFake: [
        'hrtime',
        'nextTick',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    fleet = await startFleet({ storeClock: true });
  });

  afterEach(async () => {
    await fleet.close();
    jest.useRealTimers();
  });

  const small = { vm_type: 'web', ram_mb: 512, vcpu_count: 1 };

  it('drops a node silent for 40 s though the clock went back an hour, and places nothing on it', async () => {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', timestamp_utc: '2026-08-06T12:00:00Z' }))
      .expect(200, { accepted: true });
    jest.setSystemTime(Date.now() - HOUR_MS);
    jest.advanceTimersByTime(40_000);

    await request(fleet.url).get('/v1/nodes').expect(200, []);
    await request(fleet.url).get('/v1/nodes/n1').expect(404);
    const { body } = await request(fleet.url).post('/v1/vms').send(small).expect(503);
    expect(body.message).not.toContain('n1');
  });

  it('keeps a node that beat 5 s ago though the clock went forward an hour, showing wall time', async () => {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', timestamp_utc: '2026-08-06T12:00:00Z' }))
      .expect(200);
    jest.setSystemTime(Date.now() + HOUR_MS);
    jest.advanceTimersByTime(5_000);

    const { body } = await request(fleet.url).get('/v1/fleet').expect(200);
    expect(body.nodes.map((node: { node_id: string }) => node.node_id)).toEqual(['n1']);
    expect(body.nodes[0].last_heartbeat).toBe('2026-08-06T12:00:00.000Z');
    expect(body.last_updated).toBe('2026-08-06T13:00:05.000Z');
  });
});
