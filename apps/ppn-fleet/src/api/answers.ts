import type { FleetApi, FleetOpsApi } from '@app/fleet-domain';

/**
 * The answers' types, from the committed OpenAPI documents, for the two clients and the commands
 * (the answers are checked against the wire classes: answer-check.ts).
 */
export type FleetStatus = FleetApi.components['schemas']['FleetStatus'];
export type NodeRecord = FleetApi.components['schemas']['NodeRecord'];
export type FleetVm = FleetApi.components['schemas']['FleetVm'];
export type CreateVmRequest = FleetApi.components['schemas']['CreateVmRequest'];

export type FleetVmWithLifeCycle = FleetOpsApi.components['schemas']['FleetVmWithLifeCycle'];
export type VmLifeCycle = FleetOpsApi.components['schemas']['VmLifeCycle'];
export type VmConsole = FleetOpsApi.components['schemas']['VmConsole'];
export type FleetVmBackups = FleetOpsApi.components['schemas']['FleetVmBackups'];
export type VmCopies = FleetOpsApi.components['schemas']['VmCopies'];
export type NodeDiskRoom = FleetOpsApi.components['schemas']['NodeDiskRoom'];
export type RestoredVm = FleetOpsApi.components['schemas']['RestoredVm'];
export type DeclaredDeadNode = FleetOpsApi.components['schemas']['DeclaredDeadNode'];
export type RestoreVmRequest = FleetOpsApi.components['schemas']['RestoreVmRequest'];
export type MovedVm = FleetOpsApi.components['schemas']['MovedVm'];
export type MoveVmRequest = FleetOpsApi.components['schemas']['MoveVmRequest'];
export type NodeDrain = FleetOpsApi.components['schemas']['NodeDrain'];
/** What a stop or restart asks: force, and the guest's time to power down. */
export type StopVmRequest = FleetOpsApi.components['schemas']['StopVmRequest'];
