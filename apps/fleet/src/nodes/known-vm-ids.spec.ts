import { KnownVmIds } from './known-vm-ids';

const vms = (...ids: string[]) => ids.map((vm_id) => ({ vm_id }));

describe('KnownVmIds', () => {
  it('knows what the last heartbeat taken listed, nothing more', () => {
    const known = new KnownVmIds();
    expect(known.listsOnlyKnown('n1', vms())).toBe(true);
    expect(known.listsOnlyKnown('n1', vms('a'))).toBe(false);
    known.taken('n1', vms('a', 'b'));
    expect(known.listsOnlyKnown('n1', vms('b', 'a'))).toBe(true);
    expect(known.listsOnlyKnown('n1', vms('a', 'c'))).toBe(false);
    expect(known.listsOnlyKnown('n2', vms('a'))).toBe(false);
  });

  it('forgets an id a later heartbeat no longer lists, whatever its repeats', () => {
    const known = new KnownVmIds();
    known.taken('n1', vms('a', 'b'));
    known.taken('n1', vms('a', 'a'));
    expect(known.listsOnlyKnown('n1', vms('b'))).toBe(false);
    known.taken('n1', vms('a', 'b'));
    known.taken('n1', vms('b', 'a'));
    known.taken('n1', vms('b'));
    expect(known.listsOnlyKnown('n1', vms('a'))).toBe(false);
    expect(known.listsOnlyKnown('n1', vms('b'))).toBe(true);
  });

  it('forgets every node past its bound', () => {
    const known = new KnownVmIds(2);
    known.taken('n1', vms('a'));
    known.taken('n2', vms('b'));
    known.taken('n3', vms('c'));
    expect(known.listsOnlyKnown('n1', vms('a'))).toBe(false);
    expect(known.listsOnlyKnown('n3', vms('c'))).toBe(true);
  });
});
