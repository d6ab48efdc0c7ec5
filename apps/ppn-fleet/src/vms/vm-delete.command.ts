import { Option, SubCommand } from 'nest-commander';
import { ApiCommand, ApiOptions, requireFleetId } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { Terminal } from '../terminal/terminal';

interface VmDeleteOptions extends ApiOptions {
  forget?: boolean;
}

@SubCommand({
  name: 'delete',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to delete' },
  description: 'delete a VM (DELETE /v1/vms/{vm_id})',
})
export class VmDeleteCommand extends ApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  @Option({
    flags: '--forget',
    description:
      'for a VM whose node dropped out for good (the machine is gone): forget its record, stopping nothing (a VM of a live node is refused: delete it without --forget)',
  })
  parseForget(): boolean {
    return true;
  }

  async run([vmId]: string[], options: VmDeleteOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    const forget = options.forget === true;
    await this.connector.connect(options.endpoint).deleteVm(vmId, forget);
    this.terminal.print(forget ? `forgot ${vmId} (nothing was stopped)` : `deleted ${vmId}`);
  }
}
