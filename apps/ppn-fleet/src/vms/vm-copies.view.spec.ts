import type { FleetVm } from '../api/fleet-api.client';
import type { VmCopies } from '../api/fleet-ops-api.client';
import { copyAgeCell, formatVmCopies } from './vm-copies.view';
import { formatVms } from './vms.view';

const NOW = Date.UTC(2026, 7, 6, 12, 0, 0);

const vm: FleetVm = {
  vm_id: 'vm-1',
  vm_type: 'web',
  state: 'Running',
  ram_alloc_mb: 2048,
  vcpu_count: 2,
  started_at: '2026-08-06T11:00:00Z',
  tenant_id: null,
  host_ports: [],
  node_id: 'node-a',
  accel: 'kvm',
};

const copies: VmCopies = {
  vm_id: 'vm-1',
  node_id: 'node-a',
  policy: { count: 1, every_s: 60 },
  copied_at: '2026-08-06T11:59:18.000Z',
  copy_node_id: 'node-b',
  copies: [
    {
      vm_id: 'vm-1',
      node_id: 'node-b',
      source_node_id: 'node-a',
      copied_at: '2026-08-06T11:59:18.000Z',
      size_bytes: 3_355_443,
    },
    {
      vm_id: 'vm-1',
      node_id: 'node-\u001b[2Jc',
      source_node_id: 'old',
      copied_at: '2026-08-06T10:00:00.000Z',
      size_bytes: 1_503_238_553,
    },
  ],
  backups: {
    vm_id: 'vm-1',
    backups: [
      {
        backup_id: '20260806T110000Z-3f2a/0000',
        kind: 'full',
        taken_at: '2026-08-06T11:00:00.000Z',
        size_bytes: 1_503_238_553,
        path: '/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0000-full.qcow2',
      },
    ],
    in_progress_since: null,
    last_error: null,
  },
  backups_unread: null,
};

describe('copies in the CLI', () => {
  it('shows COPY, the age of the freshest copy, only once the controller shows copies', () => {
    expect(formatVms([vm], [], 'debian', false, NOW).split('\n')[0]).not.toContain('COPY');
    const table = formatVms(
      [
        { ...vm, copied_at: '2026-08-06T11:59:18.000Z', copy_node_id: 'node-b' },
        { ...vm, vm_id: 'vm-2', copied_at: null, copy_node_id: null },
        { ...vm, vm_id: 'vm-3' },
      ],
      [],
      'debian',
      false,
      NOW,
    ).split('\n');
    expect(table[0]).toMatch(/NODE +SSH +COPY$/);
    expect(table.slice(1).map((line) => line.slice(table[0].indexOf('COPY')))).toEqual([
      '42 s',
      '   -',
      '   -',
    ]);
  });

  it('names the generation of a VM a recovery made anew (etcd mode)', () => {
    expect(formatVmCopies({ ...copies, generation: 2 }, NOW, false).split('\n')[0]).toBe(
      'vm-1 on node node-a (generation 2: recovered on another node 2 times): copies: 1 on other nodes, every 60 s',
    );
    expect(formatVmCopies(copies, NOW, false).split('\n')[0]).not.toContain('generation');
  });

  it('ages a copy in whole units, and says - for none or an unreadable time', () => {
    expect(copyAgeCell({ copied_at: '2026-08-06T11:40:00Z' }, NOW)).toBe('20 min');
    expect(copyAgeCell({ copied_at: null }, NOW)).toEqual({ text: '-', style: 'dim' });
    expect(copyAgeCell({}, NOW)).toEqual({ text: '-', style: 'dim' });
    expect(copyAgeCell({ copied_at: 'yesterday' }, NOW)).toBe('?');
  });

  it('lists the policy, every copy (where, when, size, who sent it) and every backup, printable', () => {
    expect(formatVmCopies(copies, NOW, false).split('\n')).toEqual([
      'vm-1 on node node-a: copies: 1 on other nodes, every 60 s',
      'COPY ON     KIND  TAKEN                      AGE     SIZE  SENT BY',
      'node-b      copy  2026-08-06T11:59:18.000Z  42 s  3.2 MiB  node-a',
      "node-?[2Jc  copy  2026-08-06T10:00:00.000Z   2 h  1.4 GiB  old (not the VM's node now)",
      '',
      'BACKUP                      KIND  TAKEN                        AGE     SIZE  WHERE',
      '20260806T110000Z-3f2a/0000  full  2026-08-06T11:00:00.000Z  60 min  1.4 GiB  node-a:/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0000-full.qcow2',
    ]);
  });

  it('says when there is no copy, no policy, and why the backups could not be read', () => {
    expect(
      formatVmCopies(
        {
          ...copies,
          policy: null,
          copies: [],
          backups: null,
          backups_unread: 'the agent of node node-a could not be reached',
        },
        NOW,
        false,
      ).split('\n'),
    ).toEqual([
      'vm-1 on node node-a: copies: none reported by its agent',
      'vm-1 has no copy on another node',
      '',
      'backups on node node-a not read: the agent of node node-a could not be reached',
    ]);
    expect(formatVmCopies({ ...copies, policy: { count: 0, every_s: 60 } }, NOW, false)).toContain(
      'copies: none (copies 0)',
    );
  });
});
