import { judgeHeartbeat, nodeStateFromHeartbeat, surelyNotBefore } from './node-heartbeats';
import { rfc3339ToEpochNanos } from './rfc3339';
import { heartbeat } from '../../../test/factories/heartbeat.factory';

/** The stamp order judged as text (surelyNotBefore) never disagrees with the parsed one. */
describe('surelyNotBefore', () => {
  const stamps = [
    '2026-08-06T12:00:00Z',
    '2026-08-06T12:00:01Z',
    '2026-08-06T12:00:00.1Z',
    '2026-08-06T12:00:00.123456789Z',
    '2026-08-06T12:00:00.123456788Z',
    '2026-08-06T12:00:00.1234567891Z',
    '2026-08-06T12:00:00.1234567890Z',
    '2026-08-06T11:59:60.500000000Z',
    '2026-08-06T12:00:00.000000000Z',
    '2026-08-06T12:00:00.900000000Z',
    '2026-08-06T23:59:60.999999999Z',
    '2026-08-07T00:00:00.000000000Z',
    '2026-08-06T14:00:00.000000000+02:00',
    '2026-08-06t12:00:00.000000000z',
    '2026-08-06 12:00:00.000000000Z',
    '2025-12-31T23:59:59.999999999Z',
    '2026-01-01T00:00:00.000000000Z',
    '9999-12-31T23:59:59.999999999Z',
    'not a stamp at all, 30 chars.Z',
  ];

  it.each(stamps.flatMap((sent) => stamps.map((stored) => [sent, stored])))(
    'sent %s, stored %s: only says "not before" when parsing says so',
    (sent, stored) => {
      if (!surelyNotBefore(sent, stored)) return;
      const sentAt = rfc3339ToEpochNanos(sent);
      const storedAt = rfc3339ToEpochNanos(stored);
      expect(sentAt === null || storedAt === null || sentAt >= storedAt).toBe(true);
    },
  );

  it("takes one agent's stamps in order as text, and leaves a leap second to the parser", () => {
    expect(
      surelyNotBefore('2026-08-06T12:00:01.000000000Z', '2026-08-06T12:00:00.999999999Z'),
    ).toBe(true);
    expect(
      surelyNotBefore('2026-08-06T12:00:00.999999999Z', '2026-08-06T12:00:01.000000000Z'),
    ).toBe(false);
    expect(
      surelyNotBefore('2026-08-07T00:00:00.000000000Z', '2026-08-06T23:59:60.500000000Z'),
    ).toBe(false);
  });

  it('still finds a late copy', () => {
    const at = Date.parse('2026-08-06T12:00:05Z');
    const stored = nodeStateFromHeartbeat(
      heartbeat({ node_id: 'n1', timestamp_utc: '2026-08-06T12:00:05.000000000Z' }),
      at,
    );
    const late = heartbeat({ node_id: 'n1', timestamp_utc: '2026-08-06T12:00:04.999999999Z' });
    expect(judgeHeartbeat(stored, late, at + 1_000)).toEqual({
      kind: 'out-of-order',
      stored_timestamp_utc: '2026-08-06T12:00:05.000000000Z',
    });
    const next = heartbeat({ node_id: 'n1', timestamp_utc: '2026-08-06T12:00:10.000000000Z' });
    expect(judgeHeartbeat(stored, next, at + 5_000)).toEqual({ kind: 'refreshed' });
  });
});
