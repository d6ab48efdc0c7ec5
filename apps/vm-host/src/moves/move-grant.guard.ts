import { Injectable } from '@nestjs/common';
import {
  Clock,
  CopyGrant,
  GrantGuard,
  MOVE_GRANT_CONTEXT,
  grantParam,
  verifyCopyGrant,
} from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';

/**
 * The one credential of the incoming move routes: a move grant the controller issued for the
 * path's VM and this node, signed under the move context (so a copy grant, which every copy
 * source holds, opens none of them) (GrantGuard).
 */
@Injectable()
export class MoveGrantGuard extends GrantGuard<CopyGrant> {
  protected readonly kind = 'move grant';
  protected readonly vmIdPattern = ID_PATTERN;

  constructor(
    private readonly config: VmHostConfig,
    clock: Clock,
  ) {
    super(clock);
  }

  protected verify(presented: string, nowMs: number): CopyGrant | { refused: string } {
    const verdict = verifyCopyGrant(
      this.config.nodeToken,
      this.config.nodeId,
      presented,
      nowMs,
      MOVE_GRANT_CONTEXT,
    );
    return 'refused' in verdict
      ? { refused: verdict.refused.replace('grant', 'move grant') }
      : verdict;
  }
}

/** The grant MoveGrantGuard verified for this request. */
export const VerifiedMoveGrant = grantParam<CopyGrant>('move grant');
