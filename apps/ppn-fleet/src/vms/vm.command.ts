import { Command, CommandRunner } from 'nest-commander';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { printable } from '../terminal/printable';
import {
  VmConsoleCommand,
  VmRestartCommand,
  VmStartCommand,
  VmStopCommand,
} from './vm-actions.command';
import { VmBackupCommand, VmCopiesCommand } from './vm-backups.command';
import { VmRestoreCommand } from './vm-restore.command';
import { VmMoveCommand } from './vm-move.command';
import { VmCreateCommand } from './vm-create.command';
import { VmDeleteCommand } from './vm-delete.command';

@Command({
  name: 'vm',
  description:
    'create, delete, stop, start, restart, back up, restore or move a VM, show its console or list its backups',
  subCommands: [
    VmCreateCommand,
    VmDeleteCommand,
    VmStopCommand,
    VmStartCommand,
    VmRestartCommand,
    VmConsoleCommand,
    VmBackupCommand,
    VmCopiesCommand,
    VmRestoreCommand,
    VmMoveCommand,
  ],
})
export class VmCommand extends CommandRunner {
  /** Reached only without one of its commands: none, or one it does not have (`vm list`). */
  run([given]: string[] = []): Promise<void> {
    const commands =
      'create, delete, stop, start, restart, console, backup, copies, restore or move (see ppn-fleet vm --help)';
    return Promise.reject(
      new CliFailure(
        given === undefined
          ? `vm needs a command: ${commands}; the VMs are listed by ppn-fleet vms`
          : `vm has no command ${printable(given)}: it takes ${commands}; the VMs are listed by ppn-fleet vms`,
        ExitCode.Usage,
      ),
    );
  }
}
