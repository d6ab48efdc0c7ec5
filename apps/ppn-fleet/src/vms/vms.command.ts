import { Command, Option } from 'nest-commander';
import { ApiOptions, JsonApiCommand, parseFleetId } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { Terminal } from '../terminal/terminal';
import { DEFAULT_SSH_USER, formatVms } from './vms.view';

interface VmsOptions extends ApiOptions {
  tenant?: string;
  sshUser?: string;
}

@Command({
  name: 'vms',
  description: "the VMs on live nodes, with each one's node and SSH target (GET /v1/vms)",
})
export class VmsCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  @Option({ flags: '--tenant <tenant_id>', description: 'only the VMs of this tenant' })
  parseTenant(value: string): string {
    return parseFleetId(value);
  }

  @Option({
    flags: '--ssh-user <user>',
    description: `the user the SSH targets name: the base image's default user (default: ${DEFAULT_SSH_USER})`,
  })
  parseSshUser(value: string): string {
    return parseFleetId(value);
  }

  async run(_: string[], options: VmsOptions = {}): Promise<void> {
    const api = this.connector.connect(options.endpoint);
    const vms = await api.vms(options.tenant);
    if (options.json) {
      this.terminal.print(vms.json);
      return;
    }
    // The SSH target is at the node's WireGuard address, which only the node listing has.
    const nodes = vms.data.length === 0 ? [] : (await api.nodes()).data;
    this.terminal.print(
      formatVms(vms.data, nodes, options.sshUser ?? DEFAULT_SSH_USER, this.terminal.colour),
    );
  }
}
