import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  UnauthorizedException,
  createParamDecorator,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { Clock, CopyReadGrant, presentedBearerToken, verifyCopyReadGrant } from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';

const READ_GRANT = Symbol('copy-read-grant');
type GrantedRequest = Request & { [READ_GRANT]?: CopyReadGrant };

/**
 * The one credential of the replica read routes: a READ grant the controller issued for a
 * restore elsewhere, signed with this node's token, naming this node as the holder and the
 * path's VM, not expired. A copy grant (the source's, to write) is refused here, as is the node
 * token; and a read grant opens no write route (signed in another context).
 */
@Injectable()
export class ReplicaReadGuard implements CanActivate {
  constructor(
    private readonly config: VmHostConfig,
    private readonly clock: Clock,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GrantedRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    const vmId = request.params.vm_id;
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
      refuse('this route needs a read grant: send Authorization: Bearer <grant>');
    }
    const verdict = verifyCopyReadGrant(
      this.config.nodeToken,
      this.config.nodeId,
      presented as string,
      this.clock.wallNow(),
    );
    if ('refused' in verdict)
      return refuse(`read grant refused: ${verdict.refused}`, 'invalid_token');
    if (verdict.vm !== vmId) {
      throw new ForbiddenException(`the read grant is for another VM, not vm ${vmId}`);
    }
    request[READ_GRANT] = verdict;
    return true;
  }
}

/** The read grant ReplicaReadGuard verified for this request. */
export const VerifiedReadGrant = createParamDecorator(
  (_data: unknown, context: ExecutionContext): CopyReadGrant => {
    const grant = context.switchToHttp().getRequest<GrantedRequest>()[READ_GRANT];
    if (!grant) throw new UnauthorizedException('this route needs a read grant');
    return grant;
  },
);
