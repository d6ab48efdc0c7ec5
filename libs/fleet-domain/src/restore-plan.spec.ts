import { RestoreNode, copyHoldersOf, planRestore } from './restore-plan';

const VM = 'vm-00000000000000a1';
const BACKUP = '20261205T041700Z-3f2a/0003';

function node(id: string, options: { vms?: string[]; copiedAt?: string } = {}): RestoreNode {
  return {
    node_id: id,
    vms: (options.vms ?? []).map((vm_id) => ({ vm_id })),
    replicas:
      options.copiedAt === undefined
        ? []
        : [{ vm_id: VM, source_node_id: 'n0', copied_at: options.copiedAt, size_bytes: 1 }],
  };
}

const asked = { vmId: VM, asNew: false, known: true };

describe('planRestore', () => {
  it('refuses a VM a live agent lists (409), naming the node, unless as new', () => {
    const live = [node('n1', { vms: [VM] }), node('n2', { copiedAt: '2026-12-05T04:17:00Z' })];
    expect(planRestore(asked, live)).toEqual({
      kind: 'refused',
      status: 409,
      message: expect.stringContaining(`vm ${VM} still runs on node n1`) as string,
    });
    expect(planRestore({ ...asked, asNew: true }, live)).toEqual({
      kind: 'replica',
      to: 'n2',
      copiedAt: '2026-12-05T04:17:00Z',
    });
  });

  it('takes the freshest copy across the live nodes when from and to are absent', () => {
    const live = [
      node('n1', { copiedAt: '2026-12-05T04:17:00Z' }),
      node('n2', { copiedAt: '2026-12-05T04:18:00.5Z' }),
      node('n3', { copiedAt: '2026-12-05T04:18:00Z' }),
    ];
    expect(planRestore(asked, live)).toMatchObject({ kind: 'replica', to: 'n2' });
    expect(copyHoldersOf(VM, live)[0]).toBe('node n2 (copied 2026-12-05T04:18:00.5Z)');
  });

  it('reads a backup on the node named by to, and needs to for it', () => {
    const live = [node('n1'), node('n2')];
    expect(planRestore({ ...asked, from: BACKUP, to: 'n2' }, live)).toEqual({
      kind: 'backup',
      to: 'n2',
      backupId: BACKUP,
    });
    expect(planRestore({ ...asked, from: BACKUP }, live)).toMatchObject({
      kind: 'refused',
      status: 422,
      message: expect.stringMatching(/^to: /) as string,
    });
  });

  it('restores a copy on the node that holds it, or pulls it from there onto the node named by to', () => {
    const live = [node('n1', { copiedAt: '2026-12-05T04:17:00Z' }), node('n2')];
    expect(planRestore({ ...asked, from: 'n1' }, live)).toEqual({
      kind: 'replica',
      to: 'n1',
      copiedAt: '2026-12-05T04:17:00Z',
    });
    expect(planRestore({ ...asked, from: 'n1', to: 'n2' }, live)).toEqual({
      kind: 'replica',
      to: 'n2',
      copiedAt: '2026-12-05T04:17:00Z',
      holder: 'n1',
    });
  });

  it('refuses from a node that holds no copy, or is not live, naming where copies are', () => {
    const live = [node('n1', { copiedAt: '2026-12-05T04:17:00Z' }), node('n2')];
    expect(planRestore({ ...asked, from: 'n2' }, live)).toMatchObject({
      kind: 'refused',
      status: 422,
      message: `from: node n2 holds no copy of vm ${VM}; copies of vm ${VM} are on node n1 (copied 2026-12-05T04:17:00Z)`,
    });
    expect(planRestore({ ...asked, from: 'gone' }, live)).toMatchObject({ status: 422 });
    expect(planRestore({ ...asked, to: 'gone' }, live)).toMatchObject({
      status: 422,
      message: expect.stringMatching(/^to: node gone is not live/) as string,
    });
  });

  it('with to alone: the copy it holds, else its backups or the freshest copy elsewhere', () => {
    const live = [node('n1', { copiedAt: '2026-12-05T04:17:00Z' }), node('n2')];
    expect(planRestore({ ...asked, to: 'n1' }, live)).toMatchObject({ kind: 'replica', to: 'n1' });
    expect(planRestore({ ...asked, to: 'n2' }, live)).toEqual({
      kind: 'backup',
      to: 'n2',
      holder: 'n1',
    });
    expect(planRestore({ ...asked, to: 'n2' }, [node('n2')])).toEqual({ kind: 'backup', to: 'n2' });
  });

  it('no copy anywhere: 422 for a VM it knows, 404 for one it does not', () => {
    expect(planRestore(asked, [node('n1')])).toMatchObject({ status: 422 });
    expect(planRestore({ ...asked, known: false }, [node('n1')])).toMatchObject({ status: 404 });
  });
});
