import { ApiProperty } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { SPAWN_KEY_PATTERN, SPAWN_KEY_RULE } from '../idempotency';
import { VmRecord } from './vm-record';

/** A VM as an agent reports it in a heartbeat: a VmRecord, plus what the controller keeps only. */
export class HeartbeatVm extends VmRecord {
  @ApiProperty({
    required: false,
    pattern: SPAWN_KEY_PATTERN.source,
    example: `${'0'.repeat(64)}.${'f'.repeat(64)}`,
    description:
      'The Idempotency-Key the controller spawned this VM with, while the VM is younger than 24 h. The controller uses it to answer retried creates; it never shows it.',
  })
  @IsOptional()
  @Matches(SPAWN_KEY_PATTERN, { message: `$property must be ${SPAWN_KEY_RULE}` })
  idempotency_key?: string;
}

/** The VmRecord an answer shows: its own fields only, never what the controller keeps beside. */
export function shownVm(vm: VmRecord): VmRecord {
  const shown: VmRecord = {
    vm_id: vm.vm_id,
    vm_type: vm.vm_type,
    state: vm.state,
    ram_alloc_mb: vm.ram_alloc_mb,
    vcpu_count: vm.vcpu_count,
    started_at: vm.started_at,
    host_ports: vm.host_ports.map(({ host_port, guest_port, protocol }) => ({
      host_port,
      guest_port,
      protocol,
    })),
  };
  if (vm.tenant_id !== undefined) shown.tenant_id = vm.tenant_id;
  return shown;
}
