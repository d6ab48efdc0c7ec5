import {
  DEFAULT_HEARTBEAT_INTERVAL_S,
  MAX_HEARTBEAT_INTERVAL_S,
  longestHeartbeatGapMs,
} from '@app/fleet-domain';
import { Command, Option } from 'nest-commander';
import {
  ApiOptions,
  JsonApiCommand,
  OPS_ENDPOINT_OPTION,
  OpsOptions,
  parseInteger,
} from '../api/command-options';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { FleetApiConnector } from '../api/fleet-api.connector';
import type { NodeDiskRoom } from '../api/fleet-ops-api.client';
import { Terminal } from '../terminal/terminal';
import { formatStatus } from './status.view';

interface StatusOptions extends ApiOptions, OpsOptions {
  interval?: number;
}

@Command({
  name: 'status',
  description:
    'the fleet at a glance: RAM used and free per node, its disk room (from the operations listener), VMs by state, nodes missing beats (--json: GET /v1/fleet as is)',
})
export class StatusCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
  }

  @Option(OPS_ENDPOINT_OPTION)
  parseOpsEndpoint(value: string): string {
    return value;
  }

  @Option({
    flags: '--interval <s>',
    description: `the agents' VM_HEARTBEAT_INTERVAL_S: a node is late past the longest gap between beats at that interval (default: ${DEFAULT_HEARTBEAT_INTERVAL_S}, late after ${longestHeartbeatGapMs(DEFAULT_HEARTBEAT_INTERVAL_S) / 1000} s); give it when the agents beat less often`,
  })
  parseInterval(value: string): number {
    return parseInteger(value, 1, MAX_HEARTBEAT_INTERVAL_S);
  }

  async run(_: string[], options: StatusOptions = {}): Promise<void> {
    const api = this.connector.connect(options.endpoint);
    const fleet = await api.fleet();
    if (options.json) {
      this.terminal.print(fleet.json);
      return;
    }
    const [vms, disks] = await Promise.all([api.vms(), this.nodeDisks(options)]);
    this.terminal.print(
      formatStatus(
        fleet.data,
        vms.data,
        options.interval ?? DEFAULT_HEARTBEAT_INTERVAL_S,
        this.terminal.colour,
        disks,
      ),
    );
  }

  /**
   * The nodes' disk room from the operations listener beside the API (see connectOpsBeside), or
   * undefined when there is none or it does not answer usably (a controller before the route):
   * the status is shown without its DISK column then, and nothing is said of it.
   */
  private async nodeDisks(options: StatusOptions): Promise<NodeDiskRoom[] | undefined> {
    const ops = this.connector.connectOpsBeside(options.endpoint, options.opsEndpoint);
    if (ops === undefined) return undefined;
    try {
      return (await ops.nodeDisks()).data;
    } catch (error) {
      if (!(error instanceof CliFailure) || error.exitCode === ExitCode.Usage) throw error;
      return undefined;
    }
  }
}
