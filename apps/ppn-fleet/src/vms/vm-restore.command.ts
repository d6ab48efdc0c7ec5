import { Option, SubCommand } from 'nest-commander';
import { isRfc3339 } from '@app/fleet-domain';
import {
  InvalidArgument,
  OpsCommand,
  OpsOptions,
  parseFleetId,
  requireFleetId,
} from '../api/command-options';
import { FleetApiConnector } from '../api/fleet-api.connector';
import type { RestoreVmRequest } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { formatRestored } from './vm-restore.view';

interface VmRestoreOptions extends OpsOptions {
  endpoint?: string;
  from?: string;
  at?: string;
  to?: string;
  asNew?: boolean;
}

@SubCommand({
  name: 'restore',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to bring back' },
  description:
    "bring a VM back from a copy or backup (the operations listener's POST /v1/vms/{vm_id}/restore): same id, tenant, size and host ports where free; refused while a live node runs it, unless --as-new",
})
export class VmRestoreCommand extends OpsCommand {
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
    flags: '--from <node|backup>',
    description:
      'a node id (the copy it holds) or a backup id <chain_id>/<index> in the VM_BACKUP_DIR of the node --to names (default: the freshest copy)',
  })
  parseFrom(value: string): string {
    if (!/^[\x21-\x7e]{1,128}$/.test(value)) {
      throw new InvalidArgument('It must be a node id or a backup id (<chain_id>/<index>).');
    }
    return value;
  }

  @Option({
    flags: '--at <time>',
    description:
      'the newest copy or backup taken at or before this time (RFC 3339, e.g. 2026-12-05T04:00:00Z)',
  })
  parseAt(value: string): string {
    if (!isRfc3339(value)) throw new InvalidArgument('It must be an RFC 3339 time.');
    return value;
  }

  @Option({
    flags: '--to <node>',
    description: 'the node to make it on (default: the node holding the chosen copy)',
  })
  parseTo(value: string): string {
    return parseFleetId(value);
  }

  @Option({
    flags: '--as-new',
    description: 'restore beside the original as a new VM (a new id, new host ports)',
  })
  parseAsNew(): boolean {
    return true;
  }

  async run([vmId]: string[], options: VmRestoreOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    const request: RestoreVmRequest = {
      ...(options.from === undefined ? {} : { from: options.from }),
      ...(options.at === undefined ? {} : { at: options.at }),
      ...(options.to === undefined ? {} : { to: options.to }),
      as_new: options.asNew === true,
    };
    this.terminal.progress(
      `${printable(vmId)}: restoring (the whole disk is copied; this may take minutes)`,
    );
    const restored = (await this.connector.connectOps(options.opsEndpoint).restore(vmId, request))
      .data;
    const node = await this.connector
      .connect(options.endpoint)
      .node(restored.vm.node_id)
      .then((answer) => answer.data)
      .catch(() => undefined);
    this.terminal.print(formatRestored(vmId, restored, node?.wg_ip));
  }
}
