import type { VmRecord } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { PeerCallError } from '../vms/copies/peer-transport';
import {
  ASK_AGAIN_FIRST_MS,
  ASK_AGAIN_MAX_MS,
  AskUntilAnswered,
  WAITING_LOG_EVERY_MS,
  askUntilAnswered,
} from './move-settle-later';

/**
 * The old node, its guest left paused by a completed migration the new node never confirmed,
 * asking the new node on in the background (PausedMoves), on an injected clock.
 */
describe('asking the new node on until it answers for sure', () => {
  const vm = { vm_id: 'web-1', state: 'Running' } as VmRecord;
  const refused = () =>
    new PeerCallError('node node-b at 10.0.0.3:9234: connect ECONNREFUSED 10.0.0.3:9234', 0);
  let clock: FakeClock;
  let pauses: number[];
  let waited: Array<{ forMs: number; attempts: number }>;

  beforeEach(() => {
    clock = new FakeClock();
    pauses = [];
    waited = [];
  });

  function how(
    ask: () => Promise<VmRecord>,
    more: Partial<AskUntilAnswered> = {},
  ): AskUntilAnswered {
    return {
      ask,
      stillPaused: () => Promise.resolve(true),
      sleep: (ms: number) => {
        pauses.push(ms);
        clock.advance(ms);
        return Promise.resolve();
      },
      nowMs: () => clock.now(),
      stopping: () => false,
      waiting: (forMs: number, attempts: number) => waited.push({ forMs, attempts }),
      grantExpired: () => false,
      askingEnds: () => undefined,
      ...more,
    };
  }

  it('keeps the guest paused through refused connections (the new agent down), until the restarted agent says it runs it', async () => {
    const ask = jest.fn<Promise<VmRecord>, []>();
    for (let i = 0; i < 12; i += 1) ask.mockRejectedValueOnce(refused());
    ask.mockResolvedValueOnce(vm);
    await expect(askUntilAnswered(how(ask))).resolves.toEqual({ kind: 'taken', vm });
    expect(ask).toHaveBeenCalledTimes(13);
    // 5 s, backing off to 30 s.
    expect(pauses.slice(0, 4)).toEqual([ASK_AGAIN_FIRST_MS, 10_000, 20_000, ASK_AGAIN_MAX_MS]);
    expect(Math.max(...pauses)).toBe(ASK_AGAIN_MAX_MS);
    // The waiting told, at most once a minute.
    const elapsed = pauses.reduce((sum, ms) => sum + ms, 0);
    expect(waited.length).toBeGreaterThan(0);
    expect(waited.length).toBeLessThanOrEqual(Math.floor(elapsed / WAITING_LOG_EVERY_MS));
    for (let i = 1; i < waited.length; i += 1) {
      expect(waited[i].forMs - waited[i - 1].forMs).toBeGreaterThanOrEqual(WAITING_LOG_EVERY_MS);
    }
  });

  it('lets the guest resume only on a definite no: 404 (no such move there) or 502 (rolled back)', async () => {
    for (const status of [404, 502]) {
      const ask = jest
        .fn<Promise<VmRecord>, []>()
        .mockRejectedValueOnce(refused())
        .mockRejectedValueOnce(new PeerCallError('answered 401: grant expired', 401))
        .mockRejectedValueOnce(new PeerCallError(`answered ${status}`, status));
      await expect(askUntilAnswered(how(ask))).resolves.toEqual({
        kind: 'not-taken',
        reason: `answered ${status}`,
      });
      expect(ask).toHaveBeenCalledTimes(3);
    }
  });

  it('stops asking once the guest is no longer paused here by the move, or the agent stops', async () => {
    const ask = jest.fn<Promise<VmRecord>, []>().mockRejectedValue(refused());
    let paused = 3;
    await expect(
      askUntilAnswered(how(ask, { stillPaused: () => Promise.resolve((paused -= 1) > 0) })),
    ).resolves.toEqual({ kind: 'gone' });
    expect(ask).toHaveBeenCalledTimes(2);
    let stopping = false;
    const stoppable = jest.fn<Promise<VmRecord>, []>().mockImplementation(() => {
      stopping = true;
      return Promise.reject(refused());
    });
    await expect(askUntilAnswered(how(stoppable, { stopping: () => stopping }))).resolves.toEqual({
      kind: 'stopped',
    });
    expect(stoppable).toHaveBeenCalledTimes(1);
  });

  it('asks no more once the move grant has expired (the new node would refuse it), the guest still paused and watched until settled', async () => {
    const ask = jest.fn<Promise<VmRecord>, []>().mockRejectedValue(refused());
    const expiresAtMs = clock.now() + 60_000;
    const ended: number[] = [];
    let paused = true;
    const watched = jest.fn(() => Promise.resolve(paused));
    const word = askUntilAnswered(
      how(ask, {
        stillPaused: watched,
        grantExpired: () => clock.now() >= expiresAtMs,
        askingEnds: (attempts) => ended.push(attempts),
        sleep: (ms: number) => {
          pauses.push(ms);
          clock.advance(ms);
          // Settled elsewhere (the controller's move-resume) a while after the expiry.
          if (clock.now() >= expiresAtMs + 10 * ASK_AGAIN_MAX_MS) paused = false;
          return Promise.resolve();
        },
      }),
    );
    await expect(word).resolves.toEqual({ kind: 'gone' });
    // Asked at 0, 5, 15 and 35 s, then not at 65 s: the grant expired at 60 s.
    expect(ask).toHaveBeenCalledTimes(4);
    expect(ended).toEqual([4]);
    // Watched on every 30 s until it was settled.
    expect(watched.mock.calls.length).toBeGreaterThan(ask.mock.calls.length + 5);
  });
});
