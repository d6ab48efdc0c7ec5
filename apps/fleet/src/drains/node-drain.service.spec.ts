import { MovedVm, NodeState, VmState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { nodeState } from '../../../../test/factories/node-state.factory';
import { vmRecord } from '../../../../test/factories/heartbeat.factory';
import { KeyClaims } from '../nodes/key-claims.repository';
import { InMemoryKeyClaims } from '../nodes/memory/in-memory-key-claims.repository';
import { InMemoryNodeDrains } from '../nodes/memory/in-memory-node-drains.repository';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmMoveFailedError } from '../moves/vm-move.errors';
import { VmMoveService } from '../moves/vm-move.service';
import { PlacementRefusedError } from '../vms/vms.errors';
import { DRAIN_CLAIM_HOLD_MS, DRAIN_CLAIM_RENEW_MS, drainClaimKey } from './drain-claim';
import { DRAIN_MOVES_AT_ONCE, NodeDrainService } from './node-drain.service';

/** A move the test ends by hand: resolve (moved) or reject (why not). */
interface PendingMove {
  vmId: string;
  resolve: (moved: MovedVm) => void;
  reject: (error: Error) => void;
}

/** The move path, stubbed: each move waits for the test; at most how many at once is noted. */
class StubMover {
  readonly pending: PendingMove[] = [];
  readonly started: string[] = [];
  inFlight = 0;
  mostAtOnce = 0;
  private waiters: Array<() => void> = [];

  move(vmId: string): Promise<MovedVm> {
    this.started.push(vmId);
    this.inFlight += 1;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.inFlight);
    return new Promise<MovedVm>((resolve, reject) => {
      const done = () => (this.inFlight -= 1);
      this.pending.push({
        vmId,
        resolve: (moved) => {
          done();
          resolve(moved);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      this.waiters.splice(0).forEach((wake) => wake());
    });
  }

  /** The next move begun and not yet ended, once there is one. */
  async next(): Promise<PendingMove> {
    while (this.pending.length === 0) {
      await new Promise<void>((wake) => this.waiters.push(wake));
    }
    return this.pending.shift()!;
  }
}

function moved(vmId: string, to: string, mode: 'live' | 'cold'): MovedVm {
  return {
    vm: { ...vmRecord(vmId), node_id: to },
    from_node_id: 'n1',
    mode,
    pause_ms: mode === 'live' ? 300 : null,
    total_ms: 1000,
    bytes_sent: 1,
  };
}

function setUp(vms: NodeState['vms'], claims: KeyClaims = new InMemoryKeyClaims()) {
  const clock = new FakeClock();
  const drains = new InMemoryNodeDrains();
  const mover = new StubMover();
  let stored = [nodeState({ node_id: 'n1', vms }), nodeState({ node_id: 'n2' })];
  const nodes = { listAll: () => Promise.resolve(stored) } as unknown as NodesRepository;
  const service = new NodeDrainService(
    nodes,
    drains,
    mover as unknown as VmMoveService,
    clock,
    claims,
  );
  const leave = (vmId: string) => {
    stored = stored.map((node) => ({
      ...node,
      vms: node.vms.filter((vm) => vm.vm_id !== vmId),
    }));
  };
  return { clock, drains, mover, service, leave };
}

const running = (id: string) => vmRecord(id, { state: VmState.Running });
const stopped = (id: string) => vmRecord(id, { state: VmState.Stopped, started_at: null });

describe('NodeDrainService', () => {
  it('marks the node drained at once, then moves Running VMs first, two at a time, each outcome timed', async () => {
    const { clock, drains, mover, service, leave } = setUp([
      stopped('vm-a'),
      running('vm-d'),
      running('vm-c'),
      stopped('vm-b'),
    ]);
    const drain = service.drain('n1');

    const first = await mover.next();
    const second = await mover.next();
    expect([first.vmId, second.vmId]).toEqual(['vm-c', 'vm-d']);
    expect((await drains.drainedSince()).get('n1')).toBe(clock.wallNow());
    expect(mover.inFlight).toBe(DRAIN_MOVES_AT_ONCE);

    clock.advance(12_000);
    leave('vm-c');
    first.resolve(moved('vm-c', 'n2', 'live'));
    const third = await mover.next();
    expect(third.vmId).toBe('vm-a');
    clock.advance(3_000);
    leave('vm-d');
    second.resolve(moved('vm-d', 'n2', 'live'));
    leave('vm-a');
    third.resolve(moved('vm-a', 'n2', 'cold'));
    const fourth = await mover.next();
    leave('vm-b');
    fourth.resolve(moved('vm-b', 'n2', 'cold'));

    const answer = await drain;
    expect(mover.started).toEqual(['vm-c', 'vm-d', 'vm-a', 'vm-b']);
    expect(mover.mostAtOnce).toBe(2);
    expect(answer).toMatchObject({ node_id: 'n1', drained: true, remaining_vm_ids: [] });
    expect(answer.vms).toEqual([
      {
        vm_id: 'vm-c',
        outcome: 'moved',
        to_node_id: 'n2',
        mode: 'live',
        message: null,
        took_ms: 12_000,
      },
      expect.objectContaining({ vm_id: 'vm-d', outcome: 'moved', took_ms: 15_000 }),
      expect.objectContaining({ vm_id: 'vm-a', outcome: 'moved', mode: 'cold', took_ms: 3_000 }),
      expect.objectContaining({ vm_id: 'vm-b', outcome: 'moved', mode: 'cold', took_ms: 0 }),
    ]);
    // Kept beside the flag: another controller (or this one restarted) answers the same.
    expect((await service.status('n1')).vms).toEqual(answer.vms);
  });

  it('leaves a VM that cannot move where it is, says why, and goes on with the others', async () => {
    const { mover, service, leave } = setUp([running('vm-a'), running('vm-b'), running('vm-c')]);
    const drain = service.drain('n1');
    (await mover.next()).reject(
      new PlacementRefusedError(
        'no-capacity',
        'vm vm-a cannot move: no node has 1536 MB free; n2: needs 1536 MB, has 512 MB',
      ),
    );
    (await mover.next()).reject(
      new VmMoveFailedError('vm vm-b: the move failed; the VM is left on node n1'),
    );
    leave('vm-c');
    (await mover.next()).resolve(moved('vm-c', 'n2', 'live'));
    const answer = await drain;
    expect(answer.vms.map(({ vm_id, outcome, message }) => [vm_id, outcome, message])).toEqual([
      [
        'vm-a',
        'left',
        'vm vm-a cannot move: no node has 1536 MB free; n2: needs 1536 MB, has 512 MB',
      ],
      ['vm-b', 'failed', 'vm vm-b: the move failed; the VM is left on node n1'],
      ['vm-c', 'moved', null],
    ]);
    expect(answer.remaining_vm_ids).toEqual(['vm-a', 'vm-b']);
  });

  it('takes no further VM once undrained; undrain and drain are idempotent', async () => {
    const { drains, mover, service, leave } = setUp([
      running('vm-a'),
      running('vm-b'),
      running('vm-c'),
    ]);
    const drain = service.drain('n1');
    const first = await mover.next();
    const second = await mover.next();
    await expect(service.drain('n1')).rejects.toMatchObject({ status: 409 });
    expect((await service.undrain('n1')).drained).toBe(false);
    expect((await service.undrain('n1')).drained).toBe(false);
    leave('vm-a');
    first.resolve(moved('vm-a', 'n2', 'live'));
    leave('vm-b');
    second.resolve(moved('vm-b', 'n2', 'live'));
    const answer = await drain;
    expect(mover.started).toEqual(['vm-a', 'vm-b']);
    expect(answer).toMatchObject({ drained: false, remaining_vm_ids: ['vm-c'] });
    expect(await drains.drainedSince()).toEqual(new Map());

    // Drained again: only what it still lists is taken.
    const again = service.drain('n1');
    leave('vm-c');
    (await mover.next()).resolve(moved('vm-c', 'n2', 'live'));
    expect((await again).vms.map((vm) => vm.vm_id)).toEqual(['vm-c']);
    const once = await service.drain('n1');
    expect(once).toMatchObject({ drained: true, remaining_vm_ids: [] });
    expect(mover.started).toEqual(['vm-a', 'vm-b', 'vm-c']);
  });

  it('refuses a second drain of the node from another controller on the same store (409 naming the node) until the first ends', async () => {
    const claims = new InMemoryKeyClaims();
    const first = setUp([running('vm-a')], claims);
    const second = setUp([running('vm-a')], claims);
    const drain = first.service.drain('n1');
    const move = await first.mover.next();
    await expect(second.service.drain('n1')).rejects.toMatchObject({
      status: 409,
      message: expect.stringContaining('node n1: a drain of it is under way') as string,
    });
    // Another node is drained meanwhile: its own claim.
    await expect(second.service.drain('n2')).resolves.toMatchObject({ drained: true });
    expect(second.mover.started).toEqual([]);

    first.leave('vm-a');
    second.leave('vm-a');
    move.resolve(moved('vm-a', 'n2', 'live'));
    await drain;
    await expect(second.service.drain('n1')).resolves.toMatchObject({ drained: true });
  });

  it('keeps its claim renewed while it runs, and releases it when it ends or fails', async () => {
    const claims = new InMemoryKeyClaims();
    const renew = jest.spyOn(claims, 'renew');
    const release = jest.spyOn(claims, 'release');
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const { service, mover, leave } = setUp([running('vm-a')], claims);
      const drain = service.drain('n1');
      const move = await mover.next();
      jest.advanceTimersByTime(DRAIN_CLAIM_RENEW_MS * 3);
      expect(renew).toHaveBeenCalledTimes(3);
      expect(await Promise.all(renew.mock.results.map((result) => result.value))).toEqual([
        true,
        true,
        true,
      ]);
      leave('vm-a');
      move.resolve(moved('vm-a', 'n2', 'live'));
      await drain;
      expect(release).toHaveBeenCalledTimes(1);
      jest.advanceTimersByTime(DRAIN_CLAIM_RENEW_MS * 3);
      expect(renew).toHaveBeenCalledTimes(3);
    } finally {
      jest.useRealTimers();
    }
  });

  it('ends a dead controller’s drain claim after DRAIN_CLAIM_HOLD_MS: another drain may start', async () => {
    const claims = new InMemoryKeyClaims();
    let now = 1_000;
    jest.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      // The dead controller's claim: taken, never renewed nor released.
      await claims.claim(drainClaimKey('n1'), drainClaimKey('n1'), DRAIN_CLAIM_HOLD_MS);
      const { service } = setUp([], claims);
      await expect(service.drain('n1')).rejects.toMatchObject({ status: 409 });
      now += DRAIN_CLAIM_HOLD_MS;
      await expect(service.drain('n1')).resolves.toMatchObject({ drained: true });
    } finally {
      jest.restoreAllMocks();
    }
  });

  it('refuses a node it does not know, 404', async () => {
    const { service } = setUp([]);
    await expect(service.drain('n9')).rejects.toMatchObject({
      status: 404,
      message: 'node n9 is not enrolled',
    });
    await expect(service.undrain('n9')).rejects.toMatchObject({ status: 404 });
    await expect(service.status('n9')).rejects.toMatchObject({ status: 404 });
  });
});
