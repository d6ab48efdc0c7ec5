import type { VmRecord } from '@app/fleet-domain';
import { PeerCallError } from '../vms/copies/peer-transport';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PeerTransport, Throttle } from '../vms/copies/peer-transport';
import { SETTLE_ATTEMPTS, settleTakeOver, stillAwaited } from './move-settle';

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

/** The old node, the guest paused before the switchover, asking the new node's agent. */
describe('switching over only to a new node whose agent still awaits the guest', () => {
  const peers = new PeerTransport(new Throttle(0));

  async function newNode(status: number | 'silent') {
    const server = createServer((request, response) => {
      expect(`${request.method} ${request.url}`).toBe('GET /v1/moves/web-1/incoming');
      if (status === 'silent') return;
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ vm_id: 'web-1' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { server, peer: { nodeId: 'node-b', address, grant: 'g' } };
  }

  it('goes on when it awaits it, and refuses on a 404, on silence or a refused connection', async () => {
    const awaiting = await newNode(200);
    await expect(stillAwaited(peers, awaiting.peer, 'web-1')).resolves.toBeUndefined();
    const gone = await newNode(404);
    await expect(stillAwaited(peers, gone.peer, 'web-1')).rejects.toThrow(
      /node node-b does not say it awaits the guest .*: not switched over/,
    );
    const silent = await newNode('silent');
    await expect(stillAwaited(peers, silent.peer, 'web-1', 200)).rejects.toThrow(
      'no answer within 200 ms',
    );
    for (const { server } of [awaiting, gone, silent]) server.closeAllConnections();
    await Promise.all(
      [awaiting, gone, silent].map(({ server }) => new Promise((resolve) => server.close(resolve))),
    );
    // Its agent gone now (its port closed).
    await expect(stillAwaited(peers, awaiting.peer, 'web-1')).rejects.toThrow(/not switched over/);
  });
});
