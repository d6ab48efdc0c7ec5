import type { CreateVmRequest } from '@app/fleet-domain';

/** A create request as the controller sends it (a 96 MB, 2 vCPU web VM), with these fields changed. */
export function createRequest(fields: Partial<CreateVmRequest> = {}): CreateVmRequest {
  return { vm_type: 'web', ram_mb: 96, vcpu_count: 2, prefer_kvm: false, ...fields };
}
