import { Injectable } from '@nestjs/common';
import { Clock, CopyReadGrant, GrantGuard, grantParam, verifyCopyReadGrant } from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';

/**
 * The one credential of the replica read routes: a READ grant the controller issued for a
 * restore elsewhere, naming this node as the holder and the path's VM (GrantGuard). A copy grant
 * (the source's, to write) is refused here, and a read grant opens no write route.
 */
@Injectable()
export class ReplicaReadGuard extends GrantGuard<CopyReadGrant> {
  protected readonly kind = 'read grant';
  protected readonly vmIdPattern = ID_PATTERN;

  constructor(
    private readonly config: VmHostConfig,
    clock: Clock,
  ) {
    super(clock);
  }

  protected verify(presented: string, nowMs: number): CopyReadGrant | { refused: string } {
    return verifyCopyReadGrant(this.config.nodeToken, this.config.nodeId, presented, nowMs);
  }
}

/** The grant ReplicaReadGuard verified for this request. */
export const VerifiedReadGrant = grantParam<CopyReadGrant>('read grant');
