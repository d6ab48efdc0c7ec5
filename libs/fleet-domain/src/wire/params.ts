import { ApiProperty } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { ID_SCHEMA, IsFleetId } from '../ids';

export class NodeIdParams {
  @ApiProperty({ example: 'compute-west-01', ...ID_SCHEMA })
  @IsFleetId()
  node_id!: string;
}

export class VmIdParams {
  @ApiProperty({ example: 'vm-0123456789abcdef', ...ID_SCHEMA })
  @IsFleetId()
  vm_id!: string;
}

export class TenantQuery {
  @ApiProperty({
    required: false,
    example: 'acme',
    description:
      'Only VMs of this tenant. Given once, as a plain value (never as an array or object).',
    ...ID_SCHEMA,
  })
  @IsOptional()
  @IsFleetId()
  @IsString()
  tenant_id?: string;
}
