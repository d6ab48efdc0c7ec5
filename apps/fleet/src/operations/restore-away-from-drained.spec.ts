import { drainedReason, planRestore } from '@app/fleet-domain';
import { nodeState } from '../../../../test/factories/node-state.factory';
import { planAwayFromDrained } from './restore-away-from-drained';

const VM = 'vm-00000000000000c1';
const replica = {
  vm_id: VM,
  source_node_id: 'gone',
  copied_at: '2026-08-06T11:59:00.000Z',
  size_bytes: 1,
};
const drained = new Map([['n1', drainedReason('2026-08-06T12:00:00.000Z')]]);

describe('a restore with its freshest copy on a drained node', () => {
  const live = [
    nodeState({ node_id: 'n1', replicas: [replica], ram_used_mb: 0 }),
    nodeState({ node_id: 'n2', ram_used_mb: 8_192 }),
    nodeState({ node_id: 'n3', ram_used_mb: 4_096 }),
  ];
  const asked = { vmId: VM, asNew: false, known: true };

  it('goes to the node placement chooses among the others, which pulls the copy from it', () => {
    const first = planRestore(asked, live);
    expect(first).toMatchObject({ kind: 'replica', to: 'n1' });
    if (first.kind === 'refused') return;
    expect(planAwayFromDrained(first, asked, live, drained, 1_024, 0)).toEqual({
      kind: 'replica',
      to: 'n3',
      copiedAt: replica.copied_at,
      holder: 'n1',
    });
  });

  it('keeps the plan when `to` was named, when its node is not drained, or when no other fits', () => {
    const named = { ...asked, to: 'n1' };
    const toNamed = planRestore(named, live);
    if (toNamed.kind === 'refused') throw new Error(toNamed.message);
    expect(planAwayFromDrained(toNamed, named, live, drained, 1_024, 0)).toBe(toNamed);
    const first = planRestore(asked, live);
    if (first.kind === 'refused') throw new Error(first.message);
    expect(planAwayFromDrained(first, asked, live, new Map(), 1_024, 0)).toBe(first);
    expect(planAwayFromDrained(first, asked, live, drained, 64_000, 0)).toBe(first);
  });
});
