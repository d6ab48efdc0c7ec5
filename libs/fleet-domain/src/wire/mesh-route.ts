import { ApiProperty } from '@app/api-basics';
import { IsIn, IsInt, Max, Min } from 'class-validator';
import {
  ID_SCHEMA,
  IP_LITERAL_MAX_LENGTH,
  IP_LITERAL_PATTERN,
  IsFleetId,
  IsIpAddressLiteral,
} from '../ids';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID, EXAMPLE_WG_IP } from './examples';
import { MIN_REQUESTED_HOST_PORT, type PortProtocol } from './published-port';

/**
 * Most routes one heartbeat answer carries: about 100 bytes each, so the answer stays under
 * 256 KiB (a fleet of a few hundred VMs with a few published ports each).
 */
export const MAX_MESH_ROUTES = 2048;

/**
 * One published port of a VM on another node, as the routing mesh learns it from a heartbeat
 * answer: every other node listens on `host_port` at its own mesh address and forwards each TCP
 * connection to `wg_ip:host_port`. It only tells; the agent judges each route (docs/vms.md
 * "Reaching a service").
 */
export class MeshRoute {
  @ApiProperty({ type: 'integer', minimum: MIN_REQUESTED_HOST_PORT, maximum: 65535, example: 8080 })
  @Max(65535)
  @Min(MIN_REQUESTED_HOST_PORT)
  @IsInt()
  host_port!: number;

  @ApiProperty({ enum: ['tcp', 'udp'], example: 'tcp' })
  @IsIn(['tcp', 'udp'])
  protocol!: PortProtocol;

  @ApiProperty({ example: EXAMPLE_VM_ID, ...ID_SCHEMA, description: 'The VM that publishes it.' })
  @IsFleetId()
  vm_id!: string;

  @ApiProperty({ example: EXAMPLE_NODE_ID, ...ID_SCHEMA, description: 'The node that runs it.' })
  @IsFleetId()
  node_id!: string;

  @ApiProperty({
    example: EXAMPLE_WG_IP,
    description: "That node's mesh address (its heartbeat's wg_ip).",
    pattern: IP_LITERAL_PATTERN,
    maxLength: IP_LITERAL_MAX_LENGTH,
  })
  @IsIpAddressLiteral()
  wg_ip!: string;
}
