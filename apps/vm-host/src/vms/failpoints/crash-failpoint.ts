import { Injectable, Logger } from '@nestjs/common';
import { writeSync } from 'node:fs';
import { VmHostConfig } from '../../config/vm-host.config';
import { Failpoint } from '../../config/vm-host-config.values';

/**
 * Test-only: kills the agent at one provisioning step (VM_HOST_FAILPOINT, read at start-up), as
 * abruptly as a power cut or the OOM killer would, so a test proves no VM or QEMU process is
 * lost whatever the moment, without racing a kill against the agent. Unset, it does nothing.
 */
@Injectable()
export class CrashFailpoint {
  private readonly at?: Failpoint;

  constructor(config: VmHostConfig) {
    this.at = config.failpoint;
    // Read in production too: an operator must see it set, not meet it as a lost agent.
    if (this.at) {
      new Logger('CrashFailpoint').warn(
        `node ${config.nodeId}: test-only crash hook VM_HOST_FAILPOINT=${this.at} is set: the agent will kill itself at that step`,
      );
    }
  }

  reached(step: Failpoint, vmId: string): void {
    if (step !== this.at) return;
    // Synchronous, so the line is out before the process is.
    writeSync(2, `service-vm-host: failpoint ${step} reached for vm ${vmId}: SIGKILL\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
