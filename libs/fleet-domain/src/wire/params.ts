import { ApiProperty } from './openapi-decorators';
import { IsOptional } from 'class-validator';
import { IsFleetId } from '../ids';

export class NodeIdParams {
  @ApiProperty({ example: 'compute-west-01' })
  @IsFleetId()
  node_id!: string;
}

export class VmIdParams {
  @ApiProperty({ example: 'vm-0123456789abcdef' })
  @IsFleetId()
  vm_id!: string;
}

export class TenantQuery {
  @ApiProperty({ required: false, example: 'acme', description: 'Only VMs of this tenant.' })
  @IsOptional()
  @IsFleetId()
  tenant_id?: string;
}
