import { ApiProperty } from './openapi-decorators';
import { Transform } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, Max, Min } from 'class-validator';
import { IsFleetId, IsVmType } from '../ids';

/** Largest VM either daemon accepts: 1 TiB of RAM, 256 vCPUs. */
export const MAX_VM_RAM_MB = 1024 * 1024;
export const MAX_VM_VCPUS = 256;

export class CreateVmRequest {
  @ApiProperty({ example: 'web', pattern: '^[A-Za-z0-9-]{1,63}$' })
  @IsVmType()
  vm_type!: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_RAM_MB, example: 2048 })
  @Min(1)
  @Max(MAX_VM_RAM_MB)
  @IsInt()
  ram_mb!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_VM_VCPUS, example: 2 })
  @Min(1)
  @Max(MAX_VM_VCPUS)
  @IsInt()
  vcpu_count!: number;

  @ApiProperty({ required: false, default: false })
  @Transform(({ value }: { value: unknown }) => value ?? false)
  @IsBoolean()
  prefer_kvm: boolean = false;

  @ApiProperty({ type: String, nullable: true, required: false, example: null })
  @IsOptional()
  @IsFleetId()
  preferred_node?: string | null;

  @ApiProperty({ type: String, nullable: true, required: false, example: 'acme' })
  @IsOptional()
  @IsFleetId()
  tenant_id?: string | null;
}
