import { Injectable, OnModuleDestroy } from '@nestjs/common';

/**
 * Aborted as the agent stops (`systemctl stop` must be prompt): the copies it sends, the pulls
 * it makes and the qemu-img they run on copies end at once instead of running to their end. What
 * they leave is never used: a peer takes a file into its manifest only once it is complete and
 * checked, a copy cut short is taken again at the next start, and a pull's staging is swept then.
 * Never the qemu-img that changes a VM's own disk (its copy bitmaps, quick): cut midway it could
 * damage the disk. The VMs themselves are left as the agent's stop leaves them (running).
 */
@Injectable()
export class CopyShutdown implements OnModuleDestroy {
  private readonly controller = new AbortController();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The first of the close hooks: before the HTTP server waits for its requests. */
  onModuleDestroy(): void {
    this.controller.abort(new Error('the agent is stopping'));
  }
}
