import { Injectable } from '@nestjs/common';
import { Clock, CopyGrant, GrantGuard, grantParam, verifyCopyGrant } from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';

/**
 * The one credential of the replica routes: a copy grant the controller issued for the path's
 * VM (GrantGuard). A grant opens no other route (the bearer guard takes the node token only).
 */
@Injectable()
export class ReplicaGrantGuard extends GrantGuard<CopyGrant> {
  protected readonly kind = 'copy grant';
  protected readonly vmIdPattern = ID_PATTERN;

  constructor(
    private readonly config: VmHostConfig,
    clock: Clock,
  ) {
    super(clock);
  }

  protected verify(presented: string, nowMs: number): CopyGrant | { refused: string } {
    return verifyCopyGrant(this.config.nodeToken, this.config.nodeId, presented, nowMs);
  }
}

/** The grant ReplicaGrantGuard verified for this request. */
export const VerifiedGrant = grantParam<CopyGrant>('copy grant');
