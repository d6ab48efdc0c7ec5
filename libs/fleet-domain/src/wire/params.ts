import { ApiProperty } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { IsFleetId } from '../ids';
import { EXAMPLE_NODE_ID, EXAMPLE_TENANT_ID, EXAMPLE_VM_ID } from './examples';

export class NodeIdParams {
  @ApiProperty({ example: EXAMPLE_NODE_ID })
  @IsFleetId()
  node_id!: string;
}

export class VmIdParams {
  @ApiProperty({ example: EXAMPLE_VM_ID })
  @IsFleetId()
  vm_id!: string;
}

export class TenantQuery {
  @ApiProperty({
    required: false,
    example: EXAMPLE_TENANT_ID,
    description: 'Only VMs of this tenant.',
  })
  @IsOptional()
  @IsFleetId()
  tenant_id?: string;
}
