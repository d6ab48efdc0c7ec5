import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import { IsInt, IsObject, IsOptional, Matches, Max, Min, ValidateNested } from 'class-validator';
import { MAX_VM_DISK_GB } from '../disk-capacity';
import { MAX_HOST_PORTS_PER_VM } from '../fleet.constants';
import { SPAWN_KEY_PATTERN, SPAWN_KEY_RULE } from '../idempotency';
import { HostPort, VM_ACCELS, VmRecord } from './vm-record';
import { CopyPolicy } from './vm-copies';

/**
 * A VM as an agent reports it in a heartbeat: a VmRecord whose tenant_id, host_ports and accel may be
 * left out, as the contract allows (they arrive as null and []), plus what the controller keeps
 * only.
 */
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

  @ApiProperty({
    type: CopyPolicy,
    required: false,
    description:
      'The copy policy the agent keeps for this VM (from its create); absent from older agents and VMs made before copies.',
  })
  @IsOptional()
  @ValidateNested()
  @IsObject()
  @Type(() => CopyPolicy)
  copies?: CopyPolicy;

  @ApiProperty({
    type: 'integer',
    required: false,
    minimum: 1,
    maximum: MAX_VM_DISK_GB,
    example: 20,
    description:
      "The disk_gb the VM was created with (its disk's virtual size, GiB); absent for a VM made with the base image's size, and from older agents. What a tenant's disk_gb quota counts.",
  })
  @IsOptional()
  @Min(1)
  @Max(MAX_VM_DISK_GB)
  @IsInt()
  disk_gb?: number;
}

// Only the schema is relaxed (types restated: there is no field here to read them from).
// Redeclaring the fields instead would reset, on every instance, what VmRecord initializes.
ApiProperty({ type: String, nullable: true, required: false, default: null })(
  HeartbeatVm.prototype,
  'tenant_id',
);
ApiProperty({ type: [HostPort], required: false, default: [], maxItems: MAX_HOST_PORTS_PER_VM })(
  HeartbeatVm.prototype,
  'host_ports',
);
// Agents before the field leave it out.
ApiProperty({
  enum: VM_ACCELS,
  nullable: true,
  required: false,
  description: 'kvm or tcg: how the agent runs the VM; null while not started.',
})(HeartbeatVm.prototype, 'accel');
