// Preloaded into a built daemon by a system test (NODE_OPTIONS=--require <this file>): its wall
// clock (Date) reads WALL_CLOCK_OFFSET_MS milliseconds off, as on a machine whose clock was set
// back or forward. The monotonic clock (performance.now()) is left as it is, as a step leaves it.
'use strict';

const offsetMs = Number(process.env.WALL_CLOCK_OFFSET_MS || 0);
const RealDate = Date;

class OffsetDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offsetMs);
    else super(...args);
  }

  static now() {
    return RealDate.now() + offsetMs;
  }
}

globalThis.Date = OffsetDate;
