import { acceptHeartbeat, nodeStateFromHeartbeat } from '@app/fleet-domain';
import { heartbeat, vmRecord } from '../../../../../test/support/heartbeats';
import { InMemoryNodesRepository } from './in-memory-nodes.repository';
import { VmHolderIndex } from './vm-holder-index';

/** Node `nodeId`'s state listing `vmIds`. */
function listing(nodeId: string, vmIds: string[]) {
  return nodeStateFromHeartbeat(
    heartbeat({ node_id: nodeId, vms: vmIds.map((vmId) => vmRecord(vmId)) }),
    1_000,
  );
}

describe('VmHolderIndex', () => {
  it('follows what each node holds as its state is replaced and removed', () => {
    const index = new VmHolderIndex();
    index.replace('n1', undefined, listing('n1', ['a', 'b']));
    index.replace('n2', undefined, listing('n2', ['c']));
    expect(index.vmIds().sort()).toEqual(['a', 'b', 'c']);
    index.replace('n1', listing('n1', ['a', 'b']), listing('n1', ['b', 'd']));
    expect(index.vmIds().sort()).toEqual(['b', 'c', 'd']);
    expect(index.holdersOf('b')).toEqual(['n1']);
    index.replace('n1', listing('n1', ['b', 'd']), undefined);
    expect(index.vmIds()).toEqual(['c']);
    expect(index.holdersOf('b')).toEqual([]);
  });

  it('keeps every holder of an id two nodes hold, first first, until each lets it go', () => {
    const index = new VmHolderIndex();
    index.replace('first', undefined, listing('first', ['v']));
    index.replace('second', undefined, listing('second', ['v']));
    // Recorded once however often it comes to hold it.
    index.replace('second', listing('second', []), listing('second', ['v']));
    expect(index.holdersOf('v')).toEqual(['first', 'second']);
    index.remove('v', 'first');
    expect(index.holdersOf('v')).toEqual(['second']);
    index.remove('v', 'second');
    expect(index.vmIds()).toEqual([]);
  });
});

describe('InMemoryNodesRepository.ownersOf', () => {
  it('never names a node its record shows not holding the VM, and forgets that entry', async () => {
    const index = new VmHolderIndex();
    const nodes = new InMemoryNodesRepository(index);
    await nodes.update('n1', acceptHeartbeat(heartbeat({ node_id: 'n1' }), 1_000));
    // Entries no change of this store leaves: n1 listing nothing, a node never stored.
    index.replace('n1', undefined, listing('n1', ['a']));
    index.replace('ghost', undefined, listing('ghost', ['a', 'b']));
    expect(await nodes.ownersOf(['a', 'b'], 'n2')).toEqual(new Map());
    expect(index.vmIds()).toEqual([]);
  });
});
