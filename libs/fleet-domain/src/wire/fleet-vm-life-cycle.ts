import { ApiProperty } from '@app/api-basics';
import { Type } from 'class-transformer';
import { IsObject, ValidateIf, ValidateNested } from 'class-validator';
import { FleetVm } from './fleet-vm';
import { VmLifeCycle } from './vm-life-cycle';

/**
 * A VM as the controller's operations listener shows it: as GET /v1/vms on the API lists it,
 * with its life cycle as its node's agent reports it now.
 */
export class FleetVmWithLifeCycle extends FleetVm {
  @ApiProperty({
    type: VmLifeCycle,
    nullable: true,
    description:
      "The VM's life cycle as its node's agent answered just now (its desired state, an operation under way, restarts); null when the agent did not answer in time or usably, does not know the VM, or no live agent manages it (node_silent_since).",
  })
  // Absent counts as null: what the CLI read from an operations listener before the field.
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @ValidateNested()
  @IsObject()
  @Type(() => VmLifeCycle)
  life_cycle!: VmLifeCycle | null;
}
