import { nodeStateFromHeartbeat } from '@app/fleet-domain';
import { heartbeat, vmRecord } from '../../../../../test/support/heartbeats';
import { decodeStoredNode } from '../redis/stored-node';
import { encodeEtcdNode } from './etcd-nodes.repository';

describe('a node as etcd holds it', () => {
  it('is the stored-node shape under a fixed version line, read back whole', () => {
    const state = nodeStateFromHeartbeat(
      heartbeat({ node_id: 'n1', vms: [vmRecord('vm-1')] }),
      10_000,
    );
    const value = encodeEtcdNode(state);
    expect(value.split('\n')).toHaveLength(3);
    expect(value.startsWith(`e\n${JSON.stringify(state.record)}\n`)).toBe(true);
    expect(decodeStoredNode(value)).toEqual({ version: 'e', state });
  });
});
