import { ApiProperty } from '@app/api-basics';
import { IsIn, IsOptional, IsString } from 'class-validator';
import { ID_SCHEMA, IsFleetId } from '../ids';
import { EXAMPLE_NODE_ID, EXAMPLE_TENANT_ID, EXAMPLE_VM_ID } from './examples';

export class NodeIdParams {
  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA })
  @IsFleetId()
  node_id!: string;
}

export class VmIdParams {
  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;
}

export class DeleteVmQuery {
  @ApiProperty({
    required: false,
    enum: ['true', 'false'],
    example: 'true',
    description:
      'true: for a VM listed with node_silent_since whose machine is gone for good, forget its record without asking any agent; nothing is stopped anywhere. For a VM a live agent manages (its node is back) it is a 409, and nothing is forgotten: a DELETE without it destroys the VM. false, or absent: a VM listed with node_silent_since is a 409 and stays listed.',
  })
  @IsOptional()
  @IsString()
  @IsIn(['true', 'false'])
  forget?: 'true' | 'false';
}

export class TenantQuery {
  @ApiProperty({
    required: false,
    example: EXAMPLE_TENANT_ID,
    description:
      'Only VMs of this tenant. Given once, as a plain value (never as an array or object).',
    ...ID_SCHEMA,
  })
  @IsOptional()
  @IsFleetId()
  @IsString()
  tenant_id?: string;
}
