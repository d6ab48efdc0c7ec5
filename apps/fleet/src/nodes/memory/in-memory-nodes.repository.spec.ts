import { NODE_STALE_AFTER_MS, NodeChange, NodeState } from '@app/fleet-domain';
import { vmPublishing } from '../../../../../test/factories/heartbeat.factory';
import { nodeState } from '../../../../../test/factories/node-state.factory';
import { InMemoryNodesRepository } from './in-memory-nodes.repository';

const put =
  (state: NodeState): NodeChange<void> =>
  () => ({ next: state, result: undefined });

const remove: NodeChange<void> = () => ({ remove: true, result: undefined });

/**
 * routesGeneration: what MeshRoutes keeps its table by. Each write that may change the table
 * must move it (else a node keeps forwarding a port that moved, for up to 10 s), and a
 * heartbeat that changes nothing the table shows must not (else the table is read again
 * after every heartbeat).
 */
describe('InMemoryNodesRepository.routesGeneration', () => {
  let repository: InMemoryNodesRepository;
  const at = (receivedAtMs: number, overrides: Partial<NodeState> = {}): NodeState =>
    nodeState({ received_at_ms: receivedAtMs, vms: [vmPublishing('vm-a', 40001)], ...overrides });

  /** Whether `write` moved the generation. */
  const moves = async (write: () => Promise<unknown>): Promise<boolean> => {
    const before = repository.routesGeneration();
    await write();
    return repository.routesGeneration() !== before;
  };

  beforeEach(async () => {
    repository = new InMemoryNodesRepository();
    await repository.update('n1', put(at(0)));
  });

  it('stays for a heartbeat of a live node publishing the same ports', async () => {
    expect(await moves(() => repository.update('n1', put(at(5_000))))).toBe(false);
  });

  it('moves for a node that joins, and one whose ports or address change', async () => {
    const n2 = at(5_000, { node_id: 'n2', vms: [vmPublishing('vm-b', 40003)] });
    expect(await moves(() => repository.update('n2', put(n2)))).toBe(true);
    const otherPort = { vms: [vmPublishing('vm-a', 40002)] };
    expect(await moves(() => repository.update('n1', put(at(10_000, otherPort))))).toBe(true);
    // Another machine took the id over: the same ports, reached at another address.
    const elsewhere = { ...otherPort, wg_ip: '10.8.0.99' };
    expect(await moves(() => repository.update('n1', put(at(15_000, elsewhere))))).toBe(true);
  });

  it('moves for a node removed', async () => {
    expect(await moves(() => repository.update('n1', remove))).toBe(true);
  });

  it('moves for a heartbeat of a node about to age out, though its ports are the same', async () => {
    // A table read while this heartbeat was on its way may have left the node out already.
    const late = NODE_STALE_AFTER_MS - 1_000;
    expect(await moves(() => repository.update('n1', put(at(late))))).toBe(true);
  });

  it('moves when the sweep drops a node, and when that silent node heartbeats again', async () => {
    expect(await moves(() => repository.dropStale(1))).toBe(true);
    expect(await moves(() => repository.dropStale(1))).toBe(false);
    // Kept for its VM while silent: a write that keeps it silent shows nothing new.
    const stillSilent = { ...(await repository.listAll())[0], ram_used_mb: 1 };
    expect(await moves(() => repository.update('n1', put(stillSilent)))).toBe(false);
    expect(await moves(() => repository.update('n1', put(at(40_000))))).toBe(true);
    expect(await repository.findLive('n1', 40_000)).toBeDefined();
    // Live again, and no longer kept silent beside.
    expect((await repository.listAll()).map((node) => node.node_id)).toEqual(['n1']);
  });
});
