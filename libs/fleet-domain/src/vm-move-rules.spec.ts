import { heartbeat, vmRecord } from '../../../test/support/heartbeats';
import { holdRam } from './node-changes';
import { nodeStateFromHeartbeat } from './node-heartbeats';
import { keepsMovedVm, moveSpawnKey, restoreSpawnKey } from './vm-move-rules';

const NOW = 1_000_000;

function nodeListing(vmIds: string[]) {
  return nodeStateFromHeartbeat(
    heartbeat({ node_id: 'n2', vms: vmIds.map((vmId) => vmRecord(vmId)) }),
    NOW,
  );
}

function withHold(spawnKey: string, expiresAtMs: number) {
  const change = holdRam(
    { holdId: 'h1', ramMb: 512, requiredFreeMb: 0, nowMs: NOW, expiresAtMs, spawnKey },
    0,
  );
  const outcome = change(nodeListing([]));
  if (!outcome || !('next' in outcome) || !outcome.next) throw new Error('not held');
  return outcome.next;
}

describe('which node keeps a VM moved elsewhere before', () => {
  it('the node that holds its id now (a later move brought it there)', () => {
    expect(keepsMovedVm(nodeListing(['vm-1']), 'vm-1', NOW)).toBe(true);
    expect(keepsMovedVm(nodeListing(['vm-2']), 'vm-1', NOW)).toBe(false);
  });

  it('a node it is being moved to, while the RAM held for the move lasts', () => {
    const held = withHold(moveSpawnKey('vm-1'), NOW + 60_000);
    expect(keepsMovedVm(held, 'vm-1', NOW)).toBe(true);
    expect(keepsMovedVm(held, 'vm-2', NOW)).toBe(false);
    expect(keepsMovedVm(held, 'vm-1', NOW + 61_000)).toBe(false);
  });

  it('a node it is being restored onto (recovered back where it ran before), while the RAM held lasts', () => {
    const held = withHold(restoreSpawnKey('vm-1'), NOW + 60_000);
    expect(keepsMovedVm(held, 'vm-1', NOW)).toBe(true);
    expect(keepsMovedVm(held, 'vm-2', NOW)).toBe(false);
    expect(keepsMovedVm(held, 'vm-1', NOW + 61_000)).toBe(false);
  });

  it("not for a create's RAM held there", () => {
    expect(keepsMovedVm(withHold('vm-1', NOW + 60_000), 'vm-1', NOW)).toBe(false);
  });
});
