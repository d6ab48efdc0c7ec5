import { isRfc3339, rfc3339ToEpochNanos, toRfc3339 } from './rfc3339';

describe('rfc3339', () => {
  it('keeps the nanosecond fraction the original agent sends', () => {
    const a = rfc3339ToEpochNanos('2026-08-06T12:00:00.123456789Z');
    const b = rfc3339ToEpochNanos('2026-08-06T12:00:00.123456790Z');
    expect(a).not.toBeNull();
    expect(b! - a!).toBe(1n);
  });

  it('applies offsets, so one instant written two ways compares equal', () => {
    expect(rfc3339ToEpochNanos('2026-08-06T14:00:00.5+02:00')).toBe(
      rfc3339ToEpochNanos('2026-08-06T12:00:00.500Z'),
    );
  });

  it.each([
    '2026-08-06T12:00:00Z',
    '2026-08-06t12:00:00z',
    '2026-08-06T12:00:00.1-05:30',
    '2024-02-29T23:59:59.999999999Z',
  ])('accepts %s', (value) => {
    expect(isRfc3339(value)).toBe(true);
  });

  it.each([
    '2026-08-06',
    '2026-08-06T12:00:00',
    '2026-13-01T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-08-06T24:00:00Z',
    '2026-08-06T12:00:00.Z',
    'yesterday',
    '',
  ])('rejects %s', (value) => {
    expect(isRfc3339(value)).toBe(false);
  });

  it('rejects non-strings', () => {
    expect(isRfc3339(1754481600)).toBe(false);
    expect(isRfc3339(null)).toBe(false);
  });

  it('renders receive times as RFC 3339 in UTC', () => {
    const rendered = toRfc3339(Date.UTC(2026, 7, 6, 12, 0, 0, 42));
    expect(rendered).toBe('2026-08-06T12:00:00.042Z');
    expect(isRfc3339(rendered)).toBe(true);
  });

  it("renders every time as Date's toISOString, in and out of the second rendered last", () => {
    const base = Date.UTC(2026, 7, 6, 23, 59, 59, 0);
    const times = [
      base,
      base + 1,
      base + 9,
      base + 10,
      base + 99,
      base + 100,
      base + 999,
      base + 1000,
      base + 999,
      base - 1,
      base + 0.5,
      base + 1.5,
      base + 86_400_000,
      0,
      -1,
      -999,
      -1000,
      -1001,
      -1500,
      -62_198_755_200_000,
      253_402_300_799_999,
      253_402_300_800_000,
      base + 42,
      -0,
      1e15,
      -1e15,
    ];
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 48271) % 2147483647;
      times.push(base + (seed % 5000) - 2500, seed * 1000 + (seed % 1000));
    }
    for (const time of times)
      expect([time, toRfc3339(time)]).toEqual([time, new Date(time).toISOString()]);
    expect(() => toRfc3339(Number.NaN)).toThrow(RangeError);
  });
});
