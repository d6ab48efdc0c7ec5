import { Option, SubCommand } from 'nest-commander';
import { OpsCommand, OpsOptions, parseFleetId, requireFleetId } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import type { MoveVmRequest } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { formatMoved } from './vm-move.view';

interface VmMoveOptions extends OpsOptions {
  endpoint?: string;
  to?: string;
}

@SubCommand({
  name: 'move',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to move' },
  description:
    "move a VM to another node (the operations listener's POST /v1/vms/{vm_id}/move): live when it runs (the guest keeps running, paused only for the switchover), cold when stopped; same id, tenant, size, desired state and host ports where free",
})
export class VmMoveCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  @Option({
    flags: '--endpoint <url>',
    description:
      "the controller's API, for the new node's address in the ports printed (default: VM_FLEET_ENDPOINT, else http://127.0.0.1:9203)",
  })
  parseEndpoint(value: string): string {
    return value;
  }

  @Option({
    flags: '--to <node>',
    description: 'the node to move it to (default: the one placement chooses)',
  })
  parseTo(value: string): string {
    return parseFleetId(value);
  }

  async run([vmId]: string[], options: VmMoveOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    const request: MoveVmRequest = options.to === undefined ? {} : { to: options.to };
    this.terminal.progress(
      `${printable(vmId)}: moving (its whole disk is sent, then its memory; this may take minutes)`,
    );
    const moved = (await this.connector.connectOps(options.opsEndpoint).move(vmId, request)).data;
    const node = await this.connector
      .connect(options.endpoint)
      .node(moved.vm.node_id)
      .then((answer) => answer.data)
      .catch(() => undefined);
    this.terminal.print(formatMoved(moved, node?.wg_ip));
  }
}
