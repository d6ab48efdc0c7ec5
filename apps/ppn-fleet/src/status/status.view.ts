import {
  NODE_STALE_AFTER_MS,
  VmState,
  diskRoomText,
  longestHeartbeatGapMs,
} from '@app/fleet-domain';
import type { FleetStatus, FleetVm } from '../api/fleet-api.client';
import type { NodeDiskRoom } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { paint } from '../terminal/style';
import { Cell, formatBar, formatTable } from '../terminal/table';

const BAR_WIDTH = 20;

/**
 * Whether a node is late: its last heartbeat is older, as of the view's time, than the longest
 * gap an agent beating every `intervalS` seconds leaves when every beat gets through (jitter, a
 * slow answer; 23 s at the default 10 s). A healthy agent with a somewhat longer interval is
 * not flagged; with a much longer one, status --interval says it.
 */
export function missesBeats(lastHeartbeat: string, now: string, intervalS: number): boolean {
  return Date.parse(now) - Date.parse(lastHeartbeat) > longestHeartbeatGapMs(intervalS);
}

/**
 * Whether a VM's RAM counts as used on its node: its QEMU runs or is starting (not Stopped, not
 * Error), and the node's agent manages it. A VM with node_silent_since is not counted, as
 * placement does not count it: its node id, if live again, is another machine's (a cloned
 * VM_NODE_ID, another VM_DISK_DIR), whose RAM it does not use.
 */
export function holdsRam(vm: FleetVm): boolean {
  return (
    vm.node_silent_since === undefined && (vm.state === 'Running' || vm.state === 'Provisioning')
  );
}

/** The VMs by state, every state shown (0 too), in the API's order. */
export function countByState(vms: FleetVm[]): Array<[string, number]> {
  return (Object.values(VmState) as string[]).map((state) => [
    state,
    vms.filter((vm) => vm.state === state).length,
  ]);
}

/**
 * How many VMs run under KVM and under TCG (as their agents report it), for the VMs line; empty
 * when none says (older agents).
 */
export function accelSummary(vms: FleetVm[]): string {
  const kvm = vms.filter((vm) => vm.state === 'Running' && vm.accel === 'kvm').length;
  const tcg = vms.filter((vm) => vm.state === 'Running' && vm.accel === 'tcg').length;
  return kvm + tcg === 0 ? '' : ` (running under KVM: ${kvm}, under TCG: ${tcg})`;
}

/**
 * The nodes that dropped out while VMs of theirs are still listed (with node_silent_since): each
 * with its last heartbeat and how many VMs it left unmanaged.
 */
export function droppedNodes(
  vms: FleetVm[],
): Array<{ nodeId: string; since: string; vms: number }> {
  const dropped = new Map<string, { nodeId: string; since: string; vms: number }>();
  for (const vm of vms) {
    if (vm.node_silent_since === undefined) continue;
    const known = dropped.get(vm.node_id);
    if (known) known.vms += 1;
    else dropped.set(vm.node_id, { nodeId: vm.node_id, since: vm.node_silent_since, vms: 1 });
  }
  return [...dropped.values()];
}

/** Each node's DISK cell by its id: `-` (dim) for one not listed or reporting no room. */
function diskColumn(disks: NodeDiskRoom[]): (nodeId: string) => Cell {
  const byNode = new Map(disks.map((node) => [node.node_id, node.disk_room]));
  return (nodeId) => {
    const room = byNode.get(nodeId);
    return room ? diskRoomText(room) : { text: '-', style: 'dim' };
  };
}

/**
 * The fleet at a glance: each node's RAM used by its running and starting VMs and free (as a
 * bar), its VMs, its last heartbeat; then the VMs by state, the nodes that missed a beat (see
 * missesBeats; `intervalS` is the agents' heartbeat interval) and those dropped with VMs left. Ages are
 * measured against the controller's `last_updated`, so this machine's clock does not matter.
 * With `disks` (the operations listener's), a DISK column: what one more VM disk may have of
 * what all may (see diskRoomText), `-` for a node whose agent reports none.
 */
export function formatStatus(
  fleet: FleetStatus,
  vms: FleetVm[],
  intervalS: number,
  colour: boolean,
  disks?: NodeDiskRoom[],
): string {
  const now = fleet.last_updated;
  const seconds = (then: string): number =>
    Math.max(0, Math.round((Date.parse(now) - Date.parse(then)) / 1000));
  const missing = fleet.nodes.filter((node) => missesBeats(node.last_heartbeat, now, intervalS));
  const lateNodes = new Set(missing);
  // One pass over the VMs, not one per node.
  const usedByNode = new Map<string, number>();
  for (const vm of vms) {
    if (holdsRam(vm))
      usedByNode.set(vm.node_id, (usedByNode.get(vm.node_id) ?? 0) + vm.ram_alloc_mb);
  }
  const diskOf = disks && diskColumn(disks);
  const lines = [
    `${paint('Fleet', 'bold', colour)} at ${printable(now)}: ${fleet.nodes.length} node(s), ${vms.length} VM(s)`,
    '',
  ];
  if (fleet.nodes.length === 0) {
    lines.push('no live nodes');
  } else {
    lines.push(
      formatTable(
        [
          { header: 'NODE' },
          { header: 'RAM USED / FREE' },
          { header: 'USED', align: 'right' },
          { header: 'FREE', align: 'right' },
          { header: 'VMS', align: 'right' },
          ...(diskOf ? [{ header: 'DISK', align: 'right' as const }] : []),
          { header: 'KVM' },
          { header: 'LAST BEAT' },
        ],
        fleet.nodes.map((node) => {
          const used = usedByNode.get(node.node_id) ?? 0;
          const late = lateNodes.has(node);
          return [
            { text: printable(node.node_id) + (node.reserved ? ' (reserved)' : ''), style: 'cyan' },
            formatBar(used, node.ram_available_mb, BAR_WIDTH, colour),
            `${used} MB`,
            `${node.ram_available_mb} MB`,
            String(node.vm_count),
            ...(diskOf ? [diskOf(node.node_id)] : []),
            node.kvm_available ? 'yes' : { text: 'no', style: 'dim' },
            late
              ? { text: `${seconds(node.last_heartbeat)} s ago (late)`, style: 'red' }
              : `${seconds(node.last_heartbeat)} s ago`,
          ];
        }),
        colour,
      ),
    );
  }
  lines.push(
    '',
    `VMs: ${countByState(vms)
      .map(([state, count]) => `${count} ${state}`)
      .join(', ')}${accelSummary(vms)}`,
  );
  lines.push(
    missing.length === 0
      ? `Missing beats: ${paint('none', 'green', colour)} (interval ${intervalS} s, late after ${longestHeartbeatGapMs(intervalS) / 1000} s)`
      : `Missing beats: ${paint(
          missing
            .map((node) => `${printable(node.node_id)} (${seconds(node.last_heartbeat)} s)`)
            .join(', '),
          'red',
          colour,
        )}; late after ${longestHeartbeatGapMs(intervalS) / 1000} s (interval ${intervalS} s), dropped after ${NODE_STALE_AFTER_MS / 1000} s`,
  );
  const dropped = droppedNodes(vms);
  if (dropped.length > 0) {
    lines.push(
      `Dropped, VMs left unmanaged: ${paint(
        dropped
          .map(
            ({ nodeId, since, vms: count }) =>
              `${printable(nodeId)} (silent ${seconds(since)} s, ${count} VM(s))`,
          )
          .join(', '),
        'red',
        colour,
      )}; a delete answers 409 until its agent is back`,
    );
  }
  return lines.join('\n');
}
