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
});
