import { DesiredVmState, ID_PATTERN, VmOperation, VmState } from '@app/fleet-domain';
import type {
  DeclaredDeadNode,
  FleetStatus,
  FleetVm,
  FleetVmBackups,
  NodeDiskRoom,
  FleetVmWithLifeCycle,
  NodeRecord,
  MovedVm,
  NodeDrain,
  RestoredVm,
  VmConsole,
  VmCopies,
  VmLifeCycle,
} from './answers';

/**
 * Checks of the answers' shapes, as far as the commands read them: an answer that is JSON but
 * not what the contract says (a `201 {}`, a listing that is not an array) is refused at once,
 * rather than printed as `undefined` or polled for minutes by --wait.
 */
type Fields = Record<string, unknown>;

const VM_STATES: ReadonlySet<unknown> = new Set(Object.values(VmState));
const DESIRED_STATES: ReadonlySet<unknown> = new Set(Object.values(DesiredVmState));
const OPERATIONS: ReadonlySet<unknown> = new Set(Object.values(VmOperation));

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isHostPort(value: unknown): boolean {
  return (
    isObject(value) &&
    isCount(value.host_port) &&
    isCount(value.guest_port) &&
    typeof value.protocol === 'string'
  );
}

export function isFleetVm(value: unknown): value is FleetVm {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    ID_PATTERN.test(value.vm_id) &&
    typeof value.vm_type === 'string' &&
    VM_STATES.has(value.state) &&
    isCount(value.ram_alloc_mb) &&
    isCount(value.vcpu_count) &&
    (value.tenant_id === null ||
      value.tenant_id === undefined ||
      typeof value.tenant_id === 'string') &&
    Array.isArray(value.host_ports) &&
    value.host_ports.every(isHostPort) &&
    typeof value.node_id === 'string' &&
    ID_PATTERN.test(value.node_id) &&
    (value.node_silent_since === undefined || typeof value.node_silent_since === 'string')
  );
}

export function isNodeRecord(value: unknown): value is NodeRecord {
  return (
    isObject(value) &&
    typeof value.node_id === 'string' &&
    ID_PATTERN.test(value.node_id) &&
    typeof value.hostname === 'string' &&
    typeof value.wg_ip === 'string' &&
    isCount(value.ram_available_mb) &&
    isCount(value.vm_count) &&
    typeof value.kvm_available === 'boolean' &&
    typeof value.reserved === 'boolean' &&
    typeof value.last_heartbeat === 'string'
  );
}

export function isFleetStatus(value: unknown): value is FleetStatus {
  return (
    isObject(value) &&
    typeof value.last_updated === 'string' &&
    Array.isArray(value.nodes) &&
    value.nodes.every(isNodeRecord)
  );
}

export function isFleetVmList(value: unknown): value is FleetVm[] {
  return Array.isArray(value) && value.every(isFleetVm);
}

export function isNodeRecordList(value: unknown): value is NodeRecord[] {
  return Array.isArray(value) && value.every(isNodeRecord);
}

function isTextOrNull(value: unknown): value is string | null {
  return value === null || typeof value === 'string';
}

export function isVmLifeCycle(value: unknown): value is VmLifeCycle {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    ID_PATTERN.test(value.vm_id) &&
    VM_STATES.has(value.state) &&
    DESIRED_STATES.has(value.desired_state) &&
    (value.operation === null || OPERATIONS.has(value.operation)) &&
    isCount(value.restart_count) &&
    isTextOrNull(value.last_exit) &&
    isTextOrNull(value.reason) &&
    (value.next_start_at === null ||
      (typeof value.next_start_at === 'string' && !Number.isNaN(Date.parse(value.next_start_at))))
  );
}

export function isFleetVmWithLifeCycle(value: unknown): value is FleetVmWithLifeCycle {
  return (
    isFleetVm(value) &&
    (((value as Fields).life_cycle ?? null) === null || isVmLifeCycle((value as Fields).life_cycle))
  );
}

export function isFleetVmWithLifeCycleList(value: unknown): value is FleetVmWithLifeCycle[] {
  return Array.isArray(value) && value.every(isFleetVmWithLifeCycle);
}

export function isVmConsole(value: unknown): value is VmConsole {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    isCount(value.from) &&
    isCount(value.next) &&
    typeof value.text === 'string' &&
    typeof value.reset === 'boolean'
  );
}

function isDiskRoom(value: unknown): boolean {
  return (
    isObject(value) &&
    isCount(value.room_mb) &&
    isCount(value.committed_mb) &&
    isCount(value.committable_mb) &&
    isCount(value.reserve_mb) &&
    typeof value.overcommit === 'number' &&
    value.overcommit >= 1
  );
}

export function isNodeDiskRoomList(value: unknown): value is NodeDiskRoom[] {
  return (
    Array.isArray(value) &&
    value.every(
      (node) =>
        isObject(node) &&
        typeof node.node_id === 'string' &&
        (node.disk_room === null || isDiskRoom(node.disk_room)),
    )
  );
}

const BACKUP_KINDS: ReadonlySet<unknown> = new Set(['full', 'incremental']);

function isBackup(value: unknown): boolean {
  return (
    isObject(value) &&
    typeof value.backup_id === 'string' &&
    BACKUP_KINDS.has(value.kind) &&
    typeof value.taken_at === 'string' &&
    isCount(value.size_bytes) &&
    typeof value.path === 'string'
  );
}

export function isFleetVmBackups(value: unknown): value is FleetVmBackups {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    typeof value.node_id === 'string' &&
    Array.isArray(value.backups) &&
    value.backups.every(isBackup) &&
    (value.in_progress_since === null || typeof value.in_progress_since === 'string') &&
    (value.last_error === null || typeof value.last_error === 'string')
  );
}

function isNullableText(value: unknown): boolean {
  return value === null || typeof value === 'string';
}

function isPeerCopy(value: unknown): boolean {
  return (
    isObject(value) &&
    typeof value.node_id === 'string' &&
    typeof value.source_node_id === 'string' &&
    typeof value.copied_at === 'string' &&
    isCount(value.size_bytes)
  );
}

export function isVmCopies(value: unknown): value is VmCopies {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    typeof value.node_id === 'string' &&
    (value.policy === null ||
      (isObject(value.policy) && isCount(value.policy.count) && isCount(value.policy.every_s))) &&
    isNullableText(value.copied_at) &&
    isNullableText(value.copy_node_id) &&
    Array.isArray(value.copies) &&
    value.copies.every(isPeerCopy) &&
    (value.backups === null ||
      (isObject(value.backups) &&
        Array.isArray(value.backups.backups) &&
        value.backups.backups.every(isBackup) &&
        isNullableText(value.backups.in_progress_since) &&
        isNullableText(value.backups.last_error))) &&
    isNullableText(value.backups_unread)
  );
}

const RESTORE_SOURCES = new Set<unknown>(['replica', 'backup']);

export function isRestoredVm(value: unknown): value is RestoredVm {
  return (
    isObject(value) &&
    isFleetVm(value.vm) &&
    isObject(value.point) &&
    RESTORE_SOURCES.has(value.point.source) &&
    typeof value.point.backup_id === 'string' &&
    typeof value.point.taken_at === 'string' &&
    (value.replaced_node_id === null || typeof value.replaced_node_id === 'string')
  );
}

const MOVE_MODES = new Set<unknown>(['live', 'cold']);

export function isMovedVm(value: unknown): value is MovedVm {
  return (
    isObject(value) &&
    isFleetVm(value.vm) &&
    typeof value.from_node_id === 'string' &&
    MOVE_MODES.has(value.mode) &&
    (value.pause_ms === null || isCount(value.pause_ms)) &&
    isCount(value.total_ms) &&
    isCount(value.bytes_sent)
  );
}

export function isDeclaredDeadNode(value: unknown): value is DeclaredDeadNode {
  return (
    isObject(value) &&
    typeof value.node_id === 'string' &&
    isNullableText(value.last_renewed_at) &&
    Array.isArray(value.protected_vm_ids) &&
    value.protected_vm_ids.every((id) => typeof id === 'string')
  );
}

const DRAIN_OUTCOMES = new Set<unknown>(['moved', 'left', 'failed']);

function isDrainedVm(value: unknown): boolean {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    DRAIN_OUTCOMES.has(value.outcome) &&
    isNullableText(value.to_node_id) &&
    (value.mode === null || MOVE_MODES.has(value.mode)) &&
    isNullableText(value.message) &&
    isCount(value.took_ms)
  );
}

export function isNodeDrain(value: unknown): value is NodeDrain {
  return (
    isObject(value) &&
    typeof value.node_id === 'string' &&
    typeof value.drained === 'boolean' &&
    isNullableText(value.since) &&
    Array.isArray(value.vms) &&
    value.vms.every(isDrainedVm) &&
    Array.isArray(value.remaining_vm_ids) &&
    value.remaining_vm_ids.every((id) => typeof id === 'string')
  );
}
