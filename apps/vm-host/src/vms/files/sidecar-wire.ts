import { refusedFields } from '@app/daemon';
import { VmRecord, VmState } from '@app/fleet-domain';
import type { VmSidecar } from './vm-sidecar';

/** The fields of a VM's record (VmRecord) that a heartbeat takes from its sidecar. */
export const RECORD_FIELDS = [
  'vm_type',
  'tenant_id',
  'ram_alloc_mb',
  'vcpu_count',
  'started_at',
  'host_ports',
] as const;
export type RecordField = (typeof RECORD_FIELDS)[number];

/** The least a VM's record may say of each field and still be taken by the wire. */
export const LEAST_RECORD: Readonly<Pick<VmSidecar, RecordField>> = {
  vm_type: 'unknown',
  tenant_id: null,
  ram_alloc_mb: 1,
  vcpu_count: 1,
  started_at: null,
  host_ports: [],
};

/**
 * The fields of the sidecar that the controller's own rules for a VM's record (VmRecord, which
 * every heartbeat is validated with) refuse: a sidecar the agent reads may still hold values the
 * wire does not take (written by hand, by another version), and one such VM in a heartbeat makes
 * the controller refuse the whole node's. None when the sidecar describes the VM validly.
 */
export function wireRefusals(sidecar: VmSidecar): RecordField[] {
  const refused = new Set(
    refusedFields(VmRecord, {
      vm_id: sidecar.vm_id,
      state: VmState.Error,
      accel: null,
      ...Object.fromEntries(RECORD_FIELDS.map((field) => [field, sidecar[field]])),
    }),
  );
  return RECORD_FIELDS.filter((field) => refused.has(field));
}
