import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  UnauthorizedException,
  createParamDecorator,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  Clock,
  CopyGrant,
  MOVE_GRANT_CONTEXT,
  presentedBearerToken,
  verifyCopyGrant,
} from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';

const GRANT = Symbol('move-grant');
type GrantedRequest = Request & { [GRANT]?: CopyGrant };

/**
 * The one credential of the incoming move routes: a move grant the controller issued for the
 * path's VM and this node, signed with this node's token under the move context (so a copy grant,
 * which every copy source holds, opens none of them), not expired. See ReplicaGrantGuard.
 */
@Injectable()
export class MoveGrantGuard implements CanActivate {
  constructor(
    private readonly config: VmHostConfig,
    private readonly clock: Clock,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GrantedRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    const vmId = request.params.vm_id;
    // Before any path is built from it; the validation pipe names the field after us.
    if (typeof vmId !== 'string' || !ID_PATTERN.test(vmId)) return true;
    const presented = presentedBearerToken(request.headers.authorization);
    const refuse = (message: string, error?: string): never => {
      response.setHeader(
        'WWW-Authenticate',
        `Bearer realm="service-vm-host"${error ? `, error="${error}"` : ''}`,
      );
      throw new UnauthorizedException(message);
    };
    if (presented === undefined) {
      refuse('this route needs a move grant: send Authorization: Bearer <grant>');
    }
    const verdict = verifyCopyGrant(
      this.config.nodeToken,
      this.config.nodeId,
      presented as string,
      this.clock.wallNow(),
      MOVE_GRANT_CONTEXT,
    );
    if ('refused' in verdict) {
      return refuse(
        `move grant refused: ${verdict.refused.replace('grant', 'move grant')}`,
        'invalid_token',
      );
    }
    if (verdict.vm !== vmId) {
      throw new ForbiddenException(`the move grant is for another VM, not vm ${vmId}`);
    }
    request[GRANT] = verdict;
    return true;
  }
}

/** The grant MoveGrantGuard verified for this request. */
export const VerifiedMoveGrant = createParamDecorator(
  (_data: unknown, context: ExecutionContext): CopyGrant => {
    const grant = context.switchToHttp().getRequest<GrantedRequest>()[GRANT];
    if (!grant) throw new UnauthorizedException('this route needs a move grant');
    return grant;
  },
);
