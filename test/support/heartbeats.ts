// The builders live with the other factories (test/factories/); kept here for older imports.
export { heartbeat, vmRecord } from '../factories/heartbeat.factory';

/** The eight fields of a NodeRecord, sorted: nothing else is ever shown of a node. */
export const NODE_RECORD_FIELDS = [
  'hostname',
  'kvm_available',
  'last_heartbeat',
  'node_id',
  'ram_available_mb',
  'reserved',
  'vm_count',
  'wg_ip',
];
