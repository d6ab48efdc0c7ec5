import { Option, SubCommand } from 'nest-commander';
import { OpsCommand, OpsOptions, parseInteger, requireFleetId } from '../api/command-options';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { FleetApiConnector } from '../api/fleet-api.connector';
import { FleetOpsApiClient, FleetVmBackups } from '../api/fleet-ops-api.client';
import { CliIo } from '../terminal/cli-io';
import { printable } from '../terminal/printable';
import { Terminal } from '../terminal/terminal';
import { WAIT_POLL_MS } from './vm-life-cycle.view';
import { sizeText } from '@app/fleet-domain';
import { formatVmCopies } from './vm-copies.view';

/** How long `vm backup --wait` waits by default: a first, full copy of a large disk is slow. */
export const DEFAULT_BACKUP_WAIT_S = 3_600;

interface VmBackupOptions extends OpsOptions {
  wait?: boolean;
  timeout?: number;
}

@SubCommand({
  name: 'backup',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM to back up' },
  description:
    "back a VM up now to its node's VM_BACKUP_DIR (the operations listener's POST /v1/vms/{vm_id}/backups); --wait until it is taken",
})
export class VmBackupCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
    private readonly io: CliIo,
  ) {
    super();
  }

  @Option({
    flags: '--wait',
    description:
      'follow the backup until it is taken (exit 0, the backup printed) or failed (exit 1, why)',
  })
  parseWait(): boolean {
    return true;
  }

  @Option({
    flags: '--timeout <s>',
    description: `how long --wait waits, in seconds (default: ${DEFAULT_BACKUP_WAIT_S})`,
  })
  parseTimeout(value: string): number {
    return parseInteger(value, 1, 86_400);
  }

  async run([vmId]: string[], options: VmBackupOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    const ops = this.connector.connectOps(options.opsEndpoint);
    const begun = (await ops.backUp(vmId)).data;
    const newest = begun.backups[0]?.backup_id;
    this.terminal.print(
      `backing up ${printable(begun.vm_id)} on node ${printable(begun.node_id)} to its VM_BACKUP_DIR`,
    );
    if (!options.wait) return;
    const done = await this.waitUntilTaken(ops, vmId, options.timeout ?? DEFAULT_BACKUP_WAIT_S);
    const taken = done.backups[0];
    if (taken === undefined || taken.backup_id === newest) {
      throw new CliFailure(
        `${printable(vmId)}: the backup failed: ${printable(done.last_error ?? 'no new backup')}`,
        ExitCode.Refused,
      );
    }
    this.terminal.print(
      `${printable(vmId)}: ${printable(taken.kind)} backup ${printable(taken.backup_id)} taken, ${sizeText(taken.size_bytes)}: ${printable(done.node_id)}:${printable(taken.path)}`,
    );
  }

  private async waitUntilTaken(
    ops: FleetOpsApiClient,
    vmId: string,
    timeoutS: number,
  ): Promise<FleetVmBackups> {
    const start = this.io.now();
    for (;;) {
      await this.io.sleep(WAIT_POLL_MS);
      const backups = (await ops.backups(vmId)).data;
      if (backups.in_progress_since === null) return backups;
      const waited = Math.floor((this.io.now() - start) / 1000);
      this.terminal.progress(`${printable(vmId)}: backing up, ${waited} s`);
      if (this.io.now() - start >= timeoutS * 1000) {
        throw new CliFailure(
          `${printable(vmId)}: the backup is still under way after ${timeoutS} s (--wait)`,
          ExitCode.Refused,
        );
      }
    }
  }
}

@SubCommand({
  name: 'copies',
  arguments: '<vm_id>',
  argsDescription: { vm_id: 'the VM whose copies and backups to list' },
  description:
    "what protects a VM: its copy policy, every copy on another node and every backup: where, when, size, full or incremental (the operations listener's GET /v1/vms/{vm_id}/copies)",
})
export class VmCopiesCommand extends OpsCommand {
  constructor(
    private readonly connector: FleetApiConnector,
    private readonly terminal: Terminal,
    private readonly io: CliIo,
  ) {
    super();
  }

  async run([vmId]: string[], options: OpsOptions = {}): Promise<void> {
    requireFleetId('vm_id', vmId);
    const copies = (await this.connector.connectOps(options.opsEndpoint).copies(vmId)).data;
    this.terminal.print(formatVmCopies(copies, this.io.wallNow(), this.terminal.colour));
  }
}
