import { Command, Option } from 'nest-commander';
import {
  ApiOptions,
  JsonApiCommand,
  OPS_ENDPOINT_OPTION,
  OpsOptions,
  parseFleetId,
} from '../api/command-options';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { CliIo } from '../terminal/cli-io';
import { printableLines } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { ListedVm } from './vm-life-cycle.view';
import { DEFAULT_SSH_USER, formatVms } from './vms.view';

interface VmsOptions extends ApiOptions, OpsOptions {
  tenant?: string;
  sshUser?: string;
}

@Command({
  name: 'vms',
  description:
    "the VMs on live nodes, with each one's node, SSH target and, from the operations listener, desired state (GET /v1/vms)",
})
export class VmsCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
    private readonly io: CliIo,
  ) {
    super();
  }

  @Option(OPS_ENDPOINT_OPTION)
  parseOpsEndpoint(value: string): string {
    return value;
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
    if (options.json) {
      // The API's answer, as scripts have always read it.
      this.terminal.print((await api.vms(options.tenant)).json);
      return;
    }
    const vms = (await this.withLifeCycles(options)) ?? (await api.vms(options.tenant)).data;
    // The SSH target is at the node's WireGuard address, which only the node listing has.
    const nodes = vms.length === 0 ? [] : (await api.nodes()).data;
    this.terminal.print(
      formatVms(
        vms,
        nodes,
        options.sshUser ?? DEFAULT_SSH_USER,
        this.terminal.colour,
        this.io.wallNow(),
      ),
    );
  }

  /**
   * The operations listener's listing (each VM with its life cycle), or undefined when there is
   * none beside the API (see connectOpsBeside) or it does not answer usably: the API's listing
   * is shown then, as before there was one. Unreachable (the default, off a controller's host)
   * is said nothing of; any other failure in a line.
   */
  private async withLifeCycles(options: VmsOptions): Promise<ListedVm[] | undefined> {
    const ops = this.connector.connectOpsBeside(options.endpoint, options.opsEndpoint);
    if (ops === undefined) return undefined;
    try {
      return (await ops.vms(options.tenant)).data;
    } catch (error) {
      if (!(error instanceof CliFailure) || error.exitCode === ExitCode.Usage) throw error;
      if (error.exitCode !== ExitCode.Unreachable) {
        this.terminal.printError(
          `ppn-fleet: the operations listener did not list the VMs (${printableLines(error.message).split('\n')[0]}); showing the API's listing, without desired states`,
        );
      }
      return undefined;
    }
  }
}
