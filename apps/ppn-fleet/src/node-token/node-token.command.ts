import { EnvironmentVariable, IsNodeSecret, deriveNodeToken, readEnvironment } from '@app/daemon';
import { Command, CommandRunner } from 'nest-commander';
import { CliIo } from '../terminal/cli-io';
import { requireFleetId } from '../api/command-options';
import { Terminal } from '../terminal/terminal';

/** The fleet's node secret, read as the controller reads it (same rules, same file checks). */
export class NodeSecretConfig {
  @EnvironmentVariable('VM_FLEET_NODE_SECRET', {
    required: true,
    secret: true,
    validate: IsNodeSecret(),
  })
  secret!: string;
}

@Command({
  name: 'node-token',
  arguments: '<node_id>',
  argsDescription: { node_id: 'the node whose token to print' },
  description:
    "print a node's token (its VM_FLEET_NODE_TOKEN) from VM_FLEET_NODE_SECRET(_FILE); sends nothing",
})
export class NodeTokenCommand extends CommandRunner {
  constructor(
    private readonly io: CliIo,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  run([nodeId]: string[]): Promise<void> {
    requireFleetId('node_id', nodeId);
    // A ConfigurationError goes on to runCli, which makes it a usage error (exit 2).
    const config = readEnvironment(NodeSecretConfig, this.io.env);
    this.terminal.print(deriveNodeToken(config.secret, nodeId));
    return Promise.resolve();
  }
}
