export * from './fleet.constants';
export * from './ids';
export * from './ip-address';
export * from './rfc3339';
export * from './node-state';
export * from './placement';
export * from './dispatch-health';
export * from './idempotency';
export * from './agent-refusal';
export * from './vm-capacity';
export * from './heartbeat-interval';
export * from './restart-policy';
export * from './wire/vm-life-cycle';
export * from './wire/vm-record';
export * from './wire/heartbeat-vm';
export * from './wire/fleet-vm';
export * from './wire/fleet-vm-life-cycle';
export * from './wire/node-heartbeat';
export * from './wire/node-record';
export * from './wire/create-vm-request';
export * from './wire/error-body';
export * from './wire/params';
export * from './wire/examples';
export * from './wire/heartbeat-vm';
export * from './wire/openapi-decorators';
/** The controller's API as typed from openapi/fleet.openapi.json: for its clients (agent, CLI). */
export type * as FleetApi from './wire/fleet-api.generated';
/** The controller's operations listener as typed from openapi/fleet-ops.openapi.json: for the CLI. */
export type * as FleetOpsApi from './wire/fleet-ops-api.generated';
