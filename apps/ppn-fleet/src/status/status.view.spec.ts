import type { FleetStatus, FleetVm } from '../api/fleet-api.client';
import { accelSummary, countByState, droppedNodes, formatStatus, missesBeats } from './status.view';

const NOW = '2026-08-06T12:00:30.000Z';

function node(nodeId: string, lastHeartbeat: string, ramAvailableMb: number) {
  return {
    node_id: nodeId,
    hostname: nodeId,
    wg_ip: '10.8.0.2',
    ram_available_mb: ramAvailableMb,
    vm_count: 1,
    kvm_available: true,
    reserved: false,
    last_heartbeat: lastHeartbeat,
  };
}

function vm(vmId: string, nodeId: string, state: FleetVm['state'], ramMb: number): FleetVm {
  return {
    vm_id: vmId,
    vm_type: 'web',
    state,
    ram_alloc_mb: ramMb,
    vcpu_count: 1,
    started_at: null,
    tenant_id: null,
    host_ports: [],
    node_id: nodeId,
    accel: null,
  };
}

describe('status view', () => {
  const fleet: FleetStatus = {
    nodes: [
      node('node-a', '2026-08-06T12:00:29.000Z', 3072),
      node('node-b', '2026-08-06T12:00:06.000Z', 8192),
    ],
    last_updated: NOW,
  };
  const vms = [
    vm('vm-1', 'node-a', 'Running', 1024),
    vm('vm-2', 'node-b', 'Provisioning', 2048),
    // Its QEMU does not run: its RAM is free.
    vm('vm-3', 'node-a', 'Stopped', 4096),
  ];

  it('a node misses beats past the longest gap of a healthy agent at that interval', () => {
    // 10 s: up to 11 s of jittered wait, two 5 s request timeouts and 2 s reading VMs: 23 s.
    expect(missesBeats('2026-08-06T12:00:07.000Z', NOW, 10)).toBe(false);
    expect(missesBeats('2026-08-06T12:00:06.999Z', NOW, 10)).toBe(true);
    // A healthy agent beating every 16 s (VM_HEARTBEAT_INTERVAL_S) is not late at 18 s.
    expect(missesBeats('2026-08-06T12:00:12.000Z', NOW, 10)).toBe(false);
    expect(missesBeats('2026-08-06T12:00:06.999Z', NOW, 16)).toBe(false);
  });

  it('counts VMs by every state, 0 included', () => {
    expect(countByState(vms)).toEqual([
      ['Running', 1],
      ['Stopped', 1],
      ['Provisioning', 1],
      ['Error', 0],
    ]);
  });

  it('says how many running VMs run under KVM and under TCG, nothing when no agent says', () => {
    expect(accelSummary(vms)).toBe('');
    const reported = vms.map(
      (vm, index) => ({ ...vm, accel: index === 0 ? 'tcg' : 'kvm' }) as const,
    );
    const running = reported.map((vm) => ({ ...vm, state: 'Running' as const }));
    expect(accelSummary(running)).toBe(' (running under KVM: 2, under TCG: 1)');
    expect(accelSummary(reported)).toBe(' (running under KVM: 0, under TCG: 1)');
  });

  it('shows each node with a RAM bar (used by its VMs, free), the VMs by state and the late nodes', () => {
    expect(formatStatus(fleet, vms, 10, false)).toBe(
      [
        'Fleet at 2026-08-06T12:00:30.000Z: 2 node(s), 3 VM(s)',
        '',
        'NODE    RAM USED / FREE            USED     FREE  VMS  KVM  LAST BEAT',
        'node-a  [#####...............]  1024 MB  3072 MB    1  yes  1 s ago',
        'node-b  [####................]  2048 MB  8192 MB    1  yes  24 s ago (late)',
        '',
        'VMs: 1 Running, 1 Stopped, 1 Provisioning, 0 Error',
        'Missing beats: node-b (24 s); late after 23 s (interval 10 s), dropped after 30 s',
      ].join('\n'),
    );
  });

  it('counts no RAM used for a silent VM (node_silent_since) on a live node id, as placement does not', () => {
    // node-a is heartbeated by another machine now (a cloned VM_NODE_ID): vm-9 is not on it.
    const silentOnLive = {
      ...vm('vm-9', 'node-a', 'Running', 2048),
      node_silent_since: '2026-08-06T11:59:00.000Z',
    };
    const row = formatStatus(fleet, [...vms, silentOnLive], 10, false)
      .split('\n')
      .find((line) => line.startsWith('node-a'));
    expect(row).toBe('node-a  [#####...............]  1024 MB  3072 MB    1  yes  1 s ago');
  });

  it("adds a DISK column from the listener's disk room: committable of what all VM disks may have, '-' when none is reported", () => {
    const room = { room_mb: 40_960, committed_mb: 0, reserve_mb: 2_048 };
    const lines = formatStatus(fleet, vms, 10, false, [
      { node_id: 'node-a', disk_room: { ...room, committable_mb: 12_390, overcommit: 1.5 } },
      { node_id: 'node-b', disk_room: null },
    ]).split('\n');
    expect(lines.slice(2, 5)).toEqual([
      'NODE    RAM USED / FREE            USED     FREE  VMS             DISK  KVM  LAST BEAT',
      'node-a  [#####...............]  1024 MB  3072 MB    1  12.0 / 60.0 GiB  yes  1 s ago',
      'node-b  [####................]  2048 MB  8192 MB    1                -  yes  24 s ago (late)',
    ]);
  });

  it('names the nodes dropped with VMs still listed (node_silent_since), with their VM count', () => {
    const silent = '2026-08-06T11:55:30.000Z';
    const left = [
      vm('vm-1', 'node-a', 'Running', 1024),
      { ...vm('vm-4', 'node-z', 'Running', 512), node_silent_since: silent },
      { ...vm('vm-5', 'node-z', 'Stopped', 512), node_silent_since: silent },
    ];
    expect(droppedNodes(left)).toEqual([{ nodeId: 'node-z', since: silent, vms: 2 }]);
    expect(formatStatus(fleet, left, 10, false).split('\n').at(-1)).toBe(
      'Dropped, VMs left unmanaged: node-z (silent 300 s, 2 VM(s)); a delete answers 409 until its agent is back',
    );
    expect(formatStatus(fleet, vms, 10, false)).not.toContain('Dropped');
  });

  it('says so when the fleet is empty, and colours late nodes red on a terminal', () => {
    expect(formatStatus({ nodes: [], last_updated: NOW }, [], 10, false)).toContain(
      'no live nodes',
    );
    expect(formatStatus(fleet, vms, 10, true)).toContain('\u001b[31m24 s ago (late)\u001b[39m');
  });
});
