import { ApiProperty } from './openapi-decorators';
import { IsOptional, IsString } from 'class-validator';
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
