// Preloaded into a built daemon by a system test (node --require <this file>): on SIGUSR2 its
// monotonic clock (performance.now()) jumps MONOTONIC_JUMP_MS ahead, as if that much time had
// passed at once, and says so on stdout. A test then sees what a silence of that length leads
// to without waiting it out (the enrollment spec proves the real 30 s). The wall clock (Date)
// is left as it is.
'use strict';

const jumpMs = Number(process.env.MONOTONIC_JUMP_MS || 0);
const realNow = performance.now.bind(performance);
let aheadMs = 0;

performance.now = () => realNow() + aheadMs;

process.on('SIGUSR2', () => {
  aheadMs += jumpMs;
  process.stdout.write(`monotonic clock jumped ${jumpMs} ms ahead\n`);
});
