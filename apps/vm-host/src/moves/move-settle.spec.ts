import type { VmRecord } from '@app/fleet-domain';
import { PeerCallError } from '../vms/copies/peer-transport';
import { SETTLE_ATTEMPTS, settleTakeOver } from './move-settle';

/** The old node, its migration completed, asking the new node whether it took the guest over. */
describe('settling a live move once its migration completed', () => {
  const vm = { vm_id: 'web-1', state: 'Running' } as VmRecord;
  const noAnswer = () => new PeerCallError('node node-b did not answer (timeout)', 0);
  const pauses: number[] = [];
  const pause = (ms: number) => {
    pauses.push(ms);
    return Promise.resolve();
  };

  beforeEach(() => (pauses.length = 0));

  it('is taken when the new node answers with the VM, even after lost answers', async () => {
    const ask = jest
      .fn<Promise<VmRecord>, []>()
      .mockRejectedValueOnce(noAnswer())
      .mockResolvedValueOnce(vm);
    await expect(settleTakeOver(ask, pause)).resolves.toEqual({ kind: 'taken', vm });
    expect(ask).toHaveBeenCalledTimes(2);
  });

  it('never lets the guest resume here on silence: the new node may run it (the mesh cut)', async () => {
    const ask = jest.fn<Promise<VmRecord>, []>().mockRejectedValue(noAnswer());
    await expect(settleTakeOver(ask, pause)).resolves.toMatchObject({
      kind: 'unanswered',
      reason: 'node node-b did not answer (timeout)',
    });
    expect(ask).toHaveBeenCalledTimes(SETTLE_ATTEMPTS);
    expect(pauses).toHaveLength(SETTLE_ATTEMPTS - 1);
  });

  it("never lets the guest resume here when the new node's agent refuses connections: killed right after its QEMU ran the guest, it may run it", async () => {
    const refused = new PeerCallError(
      'node node-b at 10.0.0.3:9234: connect ECONNREFUSED 10.0.0.3:9234',
      0,
    );
    const ask = jest.fn<Promise<VmRecord>, []>().mockRejectedValue(refused);
    await expect(settleTakeOver(ask, pause)).resolves.toEqual({
      kind: 'unanswered',
      reason: refused.message,
    });
    expect(ask).toHaveBeenCalledTimes(SETTLE_ATTEMPTS);
    const mixed = jest
      .fn<Promise<VmRecord>, []>()
      .mockRejectedValueOnce(refused)
      .mockRejectedValue(noAnswer());
    await expect(settleTakeOver(mixed, pause)).resolves.toMatchObject({ kind: 'unanswered' });
  });

  it('lets the guest resume here only on a definite no: no such move there (404), or its take-over rolled back (502)', async () => {
    for (const status of [404, 502]) {
      const ask = jest
        .fn<Promise<VmRecord>, []>()
        .mockRejectedValue(new PeerCallError(`answered ${status}`, status));
      await expect(settleTakeOver(ask, pause)).resolves.toEqual({
        kind: 'not-taken',
        reason: `answered ${status}`,
      });
      expect(ask).toHaveBeenCalledTimes(1);
    }
  });

  it('takes any other answer as no word on the guest: it stays paused here', async () => {
    for (const error of [
      new PeerCallError('answered 401: grant expired', 401),
      new PeerCallError('answered 409', 409),
      new Error('socket closed oddly'),
    ]) {
      const ask = jest.fn<Promise<VmRecord>, []>().mockRejectedValue(error);
      await expect(settleTakeOver(ask, pause)).resolves.toMatchObject({ kind: 'unanswered' });
    }
  });
});
