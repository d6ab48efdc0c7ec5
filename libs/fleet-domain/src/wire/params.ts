import { ApiProperty } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsFleetId } from '../ids';

export class NodeIdParams {
  @ApiProperty({ example: 'compute-west-01' })
  @IsFleetId()
  node_id!: string;
}

export class VmIdParams {
  @ApiProperty({ example: 'vm-20260806-120000-a1b2c3' })
  @IsFleetId()
  vm_id!: string;
}

export class TenantQuery {
  @ApiProperty({ required: false, example: 'acme', description: 'Only VMs of this tenant.' })
  @IsOptional()
  @IsFleetId()
  tenant_id?: string;
}
