import { ApiProperty } from '@nestjs/swagger';
import { HostPort, VmRecord } from './vm-record';

/**
 * A VM as an agent reports it in a heartbeat: a VmRecord whose tenant_id and host_ports may be
 * left out, as the contract allows; they arrive as null and [].
 */
export class HeartbeatVm extends VmRecord {}

// Only the schema is relaxed (types restated: there is no field here to read them from).
// Redeclaring the fields instead would reset, on every instance, what VmRecord initializes.
ApiProperty({ type: String, nullable: true, required: false, default: null })(
  HeartbeatVm.prototype,
  'tenant_id',
);
ApiProperty({ type: [HostPort], required: false, default: [] })(
  HeartbeatVm.prototype,
  'host_ports',
);
