import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  UnauthorizedException,
  createParamDecorator,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { presentedBearerToken } from './bearer-token.guard';
import { Clock } from './clock';

/** What every controller-issued grant names: the VM it opens routes of. */
export interface VmGrant {
  vm: string;
}

const GRANT = Symbol('verified-grant');
type GrantedRequest = Request & { [GRANT]?: VmGrant };

/**
 * The one credential of an agent's grant-only routes (a copy's, a read's, a move's): a grant
 * the controller issued for the path's VM, signed with this node's own token (so only the
 * controller, which derives it, could have made it), naming this node, not expired. The node
 * token itself is refused (it is no grant). Each kind of grant is signed in its own context, so
 * one kind never opens another's routes, and no grant opens a node-token route.
 */
export abstract class GrantGuard<T extends VmGrant> implements CanActivate {
  /** As messages name it: "copy grant", "read grant", "move grant". */
  protected abstract readonly kind: string;
  /** The VM ids the path may name: anything else is left to the validation pipe to refuse. */
  protected abstract readonly vmIdPattern: RegExp;

  constructor(protected readonly clock: Clock) {}

  /** The grant `presented` carries if it is valid for this node at `nowMs`, else why not. */
  protected abstract verify(presented: string, nowMs: number): T | { refused: string };

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GrantedRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    const vmId = request.params.vm_id;
    // Before any path is built from it; the validation pipe names the field after us.
    if (typeof vmId !== 'string' || !this.vmIdPattern.test(vmId)) return true;
    const presented = presentedBearerToken(request.headers.authorization);
    const refuse = (message: string, error?: string): never => {
      response.setHeader(
        'WWW-Authenticate',
        `Bearer realm="service-vm-host"${error ? `, error="${error}"` : ''}`,
      );
      throw new UnauthorizedException(message);
    };
    if (presented === undefined) {
      return refuse(`this route needs a ${this.kind}: send Authorization: Bearer <grant>`);
    }
    const verdict = this.verify(presented, this.clock.wallNow());
    if ('refused' in verdict) {
      return refuse(`${this.kind} refused: ${verdict.refused}`, 'invalid_token');
    }
    if (verdict.vm !== vmId) {
      throw new ForbiddenException(`the ${this.kind} is for another VM, not vm ${vmId}`);
    }
    request[GRANT] = verdict;
    return true;
  }
}

/** A route parameter's decorator: the grant its GrantGuard verified for this request. */
export function grantParam<T extends VmGrant>(kind: string) {
  return createParamDecorator((_data: unknown, context: ExecutionContext): T => {
    const grant = context.switchToHttp().getRequest<GrantedRequest>()[GRANT];
    if (!grant) throw new UnauthorizedException(`this route needs a ${kind}`);
    return grant as T;
  });
}
