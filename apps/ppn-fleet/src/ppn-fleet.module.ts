import { DynamicModule, Module } from '@nestjs/common';
import { CliIo } from './terminal/cli-io';
import { FleetApiConnector } from './api/fleet-api.connector';
import { ImageBuildCommand, ImageCommand, ImageListCommand } from './images/image.command';
import { CommandLineSetup } from './command-line.setup';
import { NodeTokenCommand } from './node-token/node-token.command';
import { TenantTokenCommand } from './tenant-token/tenant-token.command';
import { NodeDeclareDeadCommand } from './nodes/node-declare-dead.command';
import {
  NodeDrainCommand,
  NodeDrainStatusCommand,
  NodeUndrainCommand,
} from './nodes/node-drain.command';
import { NodeCommand, NodesCommand } from './nodes/nodes.command';
import { StatusCommand } from './status/status.command';
import { Terminal } from './terminal/terminal';
import {
  VmConsoleCommand,
  VmRestartCommand,
  VmStartCommand,
  VmStopCommand,
} from './vms/vm-actions.command';
import { VmBackupCommand, VmCopiesCommand } from './vms/vm-backups.command';
import { VmRestoreCommand } from './vms/vm-restore.command';
import { VmMoveCommand } from './vms/vm-move.command';
import { VmCommand } from './vms/vm.command';
import { VmCreateCommand } from './vms/vm-create.command';
import { VmDeleteCommand } from './vms/vm-delete.command';
import { VmsCommand } from './vms/vms.command';

/** Every command of `ppn-fleet`, and what they share; `io` is the process's or a test's. */
@Module({})
export class PpnFleetModule {
  static forIo(io: CliIo): DynamicModule {
    return {
      module: PpnFleetModule,
      providers: [
        { provide: CliIo, useValue: io },
        CommandLineSetup,
        FleetApiConnector,
        Terminal,
        StatusCommand,
        NodesCommand,
        NodeCommand,
        NodeDeclareDeadCommand,
        NodeDrainCommand,
        NodeUndrainCommand,
        NodeDrainStatusCommand,
        VmsCommand,
        VmCommand,
        VmCreateCommand,
        VmDeleteCommand,
        VmStopCommand,
        VmStartCommand,
        VmRestartCommand,
        VmConsoleCommand,
        VmBackupCommand,
        VmRestoreCommand,
        VmMoveCommand,
        VmCopiesCommand,
        NodeTokenCommand,
        TenantTokenCommand,
        ImageCommand,
        ImageBuildCommand,
        ImageListCommand,
      ],
    };
  }
}
