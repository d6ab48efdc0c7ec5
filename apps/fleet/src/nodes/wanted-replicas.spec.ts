import { vmRecord } from '../../../../test/factories/heartbeat.factory';
import { nodeState } from '../../../../test/factories/node-state.factory';
import { InMemoryNodesRepository } from './memory/in-memory-nodes.repository';
import { NodesRepository } from './nodes.repository';
import { wantedReplicaVmIds } from './wanted-replicas';

const copy = (vm_id: string, source_node_id = 'n1') => ({
  vm_id,
  source_node_id,
  copied_at: '2026-12-05T04:17:00Z',
  size_bytes: 1,
});

/** n1 live listing vm-a, n2 silent (dropped out while listing vm-c), the holder h listing vm-h. */
async function fleet(): Promise<InMemoryNodesRepository> {
  const nodes = new InMemoryNodesRepository();
  const store = (node_id: string, vmIds: string[], received_at_ms: number) =>
    nodes.update(node_id, () => ({
      next: nodeState({ node_id, vms: vmIds.map((id) => vmRecord(id)), received_at_ms }),
      result: undefined,
    }));
  await store('n1', ['vm-a'], 100_000);
  await store('n2', ['vm-c'], 0);
  await store('h', ['vm-h'], 100_000);
  await nodes.dropStale(50_000);
  return nodes;
}

describe('wantedReplicaVmIds', () => {
  it("keeps the copies of VMs some stored node holds, live, silent or the holder's own, without reading every node", async () => {
    const nodes = await fleet();
    const listAll = jest.spyOn(nodes, 'listAll');
    expect(
      await wantedReplicaVmIds(
        [copy('vm-a'), copy('vm-b'), copy('vm-c', 'n2'), copy('vm-h', 'n9')],
        nodes,
      ),
    ).toEqual(['vm-a', 'vm-c', 'vm-h']);
    expect(listAll).not.toHaveBeenCalled();
  });

  it('keeps the copies of a node the controller has no record of (forgot it on a restart): they may be all that is left', async () => {
    const nodes = await fleet();
    expect(
      await wantedReplicaVmIds([copy('vm-b'), copy('vm-x', 'n-gone'), copy('vm-y', 'n2')], nodes),
    ).toEqual(['vm-x']);
  });

  it('says nothing when the heartbeat reported no copy', async () => {
    const nodes = await fleet();
    expect(await wantedReplicaVmIds(undefined, nodes)).toBeUndefined();
    expect(await wantedReplicaVmIds([], nodes)).toBeUndefined();
  });

  it('judges the same with a store that finds source nodes by reading every one', async () => {
    const nodes = await fleet();
    const lookUp = {
      ownersOf: nodes.ownersOf.bind(nodes),
      storedAmong: (ids: readonly string[]) =>
        NodesRepository.prototype.storedAmong.call(nodes, ids),
    };
    expect(
      await wantedReplicaVmIds([copy('vm-b'), copy('vm-x', 'n-gone'), copy('vm-y', 'n2')], lookUp),
    ).toEqual(['vm-x']);
  });
});
