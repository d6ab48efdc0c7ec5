import { Command } from 'nest-commander';
import { ApiOptions, JsonApiCommand, requireFleetId } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { Terminal } from '../terminal/terminal';
import { NodeDeclareDeadCommand } from './node-declare-dead.command';
import { NodeDrainCommand, NodeDrainStatusCommand, NodeUndrainCommand } from './node-drain.command';
import { formatNode, formatNodes } from './nodes.view';

@Command({ name: 'nodes', description: 'the live nodes (GET /v1/nodes)' })
export class NodesCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  async run(_: string[], options: ApiOptions = {}): Promise<void> {
    const api = this.connector.connect(options.endpoint);
    const nodes = await api.nodes();
    if (options.json) {
      this.terminal.print(nodes.json);
      return;
    }
    // Ages against the controller's time, not this machine's.
    const { last_updated } = (await api.fleet()).data;
    this.terminal.print(formatNodes(nodes.data, last_updated, this.terminal.colour));
  }
}

@Command({
  name: 'node',
  arguments: '<node_id>',
  argsDescription: { node_id: 'the node to show' },
  description:
    'one live node (GET /v1/nodes/{node_id}), or `node declare-dead|drain|undrain|drain-status <node_id>`',
  subCommands: [
    NodeDeclareDeadCommand,
    NodeDrainCommand,
    NodeUndrainCommand,
    NodeDrainStatusCommand,
  ],
})
export class NodeCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  async run([nodeId]: string[], options: ApiOptions = {}): Promise<void> {
    requireFleetId('node_id', nodeId);
    const api = this.connector.connect(options.endpoint);
    const node = await api.node(nodeId);
    if (options.json) {
      this.terminal.print(node.json);
      return;
    }
    const { last_updated } = (await api.fleet()).data;
    this.terminal.print(formatNode(node.data, last_updated, this.terminal.colour));
  }
}
