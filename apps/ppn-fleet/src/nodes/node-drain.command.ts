import { SubCommand } from 'nest-commander';
import { OpsCommand, OpsOptions, requireFleetId } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { printable } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { formatNodeDrain } from './node-drain.view';

@SubCommand({
  name: 'drain',
  arguments: '<node_id>',
  argsDescription: { node_id: 'the node to empty for maintenance' },
  description:
    "mark a node drained (placement passes it over) and move each of its VMs off it, two at a time: live when running, cold when stopped (the operations listener's POST /v1/nodes/{node_id}/drain); a VM that cannot move stays, and is named with why",
})
export class NodeDrainCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  async run([nodeId]: string[], options: OpsOptions = {}): Promise<void> {
    requireFleetId('node_id', nodeId);
    this.terminal.progress(
      `node ${printable(nodeId)}: draining (each VM moved off it in turn; this may take minutes)`,
    );
    const drain = (await this.connector.connectOps(options.opsEndpoint).drainNode(nodeId)).data;
    this.terminal.print(formatNodeDrain(drain));
  }
}

@SubCommand({
  name: 'undrain',
  arguments: '<node_id>',
  argsDescription: { node_id: 'the drained node' },
  description:
    "end a node's drain: placement may choose it again (the operations listener's POST /v1/nodes/{node_id}/undrain); VMs moved off stay where they went",
})
export class NodeUndrainCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  async run([nodeId]: string[], options: OpsOptions = {}): Promise<void> {
    requireFleetId('node_id', nodeId);
    const drain = (await this.connector.connectOps(options.opsEndpoint).undrainNode(nodeId)).data;
    this.terminal.print(formatNodeDrain(drain));
  }
}

@SubCommand({
  name: 'drain-status',
  arguments: '<node_id>',
  argsDescription: { node_id: 'the node' },
  description:
    "whether a node is drained, and each VM's outcome so far (the operations listener's GET /v1/nodes/{node_id}/drain)",
})
export class NodeDrainStatusCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  async run([nodeId]: string[], options: OpsOptions = {}): Promise<void> {
    requireFleetId('node_id', nodeId);
    const drain = (await this.connector.connectOps(options.opsEndpoint).nodeDrain(nodeId)).data;
    this.terminal.print(formatNodeDrain(drain));
  }
}
