import { HeartbeatReplica, NodeState, acceptHeartbeat } from '@app/fleet-domain';
import { heartbeat } from '../../../../test/support/heartbeats';
import { GrantedCopies } from './granted-copies';
import { withGrantedReplicas } from './granted-replicas-change';

function copy(vm_id: string, source_node_id = 'node-a', size_bytes = 1e6): HeartbeatReplica {
  return { vm_id, source_node_id, copied_at: '2026-08-06T11:59:00Z', size_bytes };
}

describe('GrantedCopies: a node holds only the copies it was granted', () => {
  it("drops a node's claim to a copy of a VM it was never granted", () => {
    const granted = new GrantedCopies();
    granted.granted('vm-1', 'node-b', 1_000);
    expect(granted.keep('node-h', [copy('vm-1', 'node-a', 1e15)], undefined)).toEqual([]);
    expect(granted.keep('node-b', [copy('vm-1'), copy('vm-2')], undefined)).toEqual([copy('vm-1')]);
  });

  it('keeps a copy its stored record already held (a restarted controller over Redis or etcd)', () => {
    const granted = new GrantedCopies();
    expect(granted.keep('node-b', [copy('vm-1')], [copy('vm-1')])).toEqual([copy('vm-1')]);
    // The same VM said to come from another node is a new claim.
    expect(granted.keep('node-b', [copy('vm-1', 'node-x')], [copy('vm-1')])).toEqual([]);
  });

  it('filters the stored record of a heartbeat once, before anything reads it', () => {
    const granted = new GrantedCopies();
    granted.granted('vm-1', 'node-h', 1_000);
    const beat = heartbeat({
      node_id: 'node-h',
      timestamp_utc: '2026-08-06T12:00:00Z',
      replicas: [copy('vm-1'), copy('vm-2', 'node-a', 1e15)],
    });
    const change = withGrantedReplicas(acceptHeartbeat(beat, 1_000), granted);
    const { next } = change(undefined);
    expect((next as NodeState).replicas).toEqual([copy('vm-1')]);
  });
});
