import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  UnauthorizedException,
  createParamDecorator,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock, CopyGrant, presentedBearerToken, verifyCopyGrant } from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';

const GRANT = Symbol('copy-grant');
type GrantedRequest = Request & { [GRANT]?: CopyGrant };

/**
 * The one credential of the replica routes: a copy grant the controller issued for the path's
 * VM, signed with this node's own token (so only the controller, which derives it, could have
 * made it), naming this node, not expired. The node token itself is refused here (it is no
 * grant), and a grant opens no other route (the bearer guard takes the node token only).
 */
@Injectable()
export class ReplicaGrantGuard implements CanActivate {
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
      refuse('this route needs a copy grant: send Authorization: Bearer <grant>');
    }
    const verdict = verifyCopyGrant(
      this.config.nodeToken,
      this.config.nodeId,
      presented as string,
      this.clock.wallNow(),
    );
    if ('refused' in verdict)
      return refuse(`copy grant refused: ${verdict.refused}`, 'invalid_token');
    if (verdict.vm !== vmId) {
      throw new ForbiddenException(`the copy grant is for another VM, not vm ${vmId}`);
    }
    request[GRANT] = verdict;
    return true;
  }
}

/** The grant ReplicaGrantGuard verified for this request. */
export const VerifiedGrant = createParamDecorator(
  (_data: unknown, context: ExecutionContext): CopyGrant => {
    const grant = context.switchToHttp().getRequest<GrantedRequest>()[GRANT];
    if (!grant) throw new UnauthorizedException('this route needs a copy grant');
    return grant;
  },
);
