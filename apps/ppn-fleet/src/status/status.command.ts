import {
  DEFAULT_HEARTBEAT_INTERVAL_S,
  MAX_HEARTBEAT_INTERVAL_S,
  longestHeartbeatGapMs,
} from '@app/fleet-domain';
import { Command, Option } from 'nest-commander';
import { ApiOptions, JsonApiCommand, parseInteger } from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { Terminal } from '../terminal/terminal';
import { formatStatus } from './status.view';

interface StatusOptions extends ApiOptions {
  interval?: number;
}

@Command({
  name: 'status',
  description:
    'the fleet at a glance: RAM used and free per node, VMs by state, nodes missing beats (--json: GET /v1/fleet as is)',
})
export class StatusCommand extends JsonApiCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
  ) {
    super();
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
    const vms = await api.vms();
    this.terminal.print(
      formatStatus(
        fleet.data,
        vms.data,
        options.interval ?? DEFAULT_HEARTBEAT_INTERVAL_S,
        this.terminal.colour,
      ),
    );
  }
}
