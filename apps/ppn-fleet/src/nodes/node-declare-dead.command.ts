import { SubCommand } from 'nest-commander';
import { OpsCommand, OpsOptions, requireFleetId } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { Terminal } from '../terminal/terminal';

@SubCommand({
  name: 'declare-dead',
  arguments: '<node_id>',
  argsDescription: { node_id: 'the node whose machine is gone' },
  description:
    "etcd mode: recover a lost node's protected VMs from their copies now, without waiting for VM_FLEET_RECOVER_AFTER_S (the operations listener's POST /v1/nodes/{node_id}/declare-dead); refused while the node still renews its lease",
})
export class NodeDeclareDeadCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  async run([nodeId]: string[], options: OpsOptions = {}): Promise<void> {
    requireFleetId('node_id', nodeId);
    const declared = (await this.connector.connectOps(options.opsEndpoint).declareNodeDead(nodeId))
      .data;
    const vms = declared.protected_vm_ids;
    this.terminal.print(
      `${declared.node_id} declared dead (lease last renewed ${declared.last_renewed_at ?? 'at an unknown time'}): the leader recovers ${vms.length === 0 ? 'its protected VMs (none known)' : `${vms.join(', ')} from their copies`} at its next pass`,
    );
  }
}
