import { ForbiddenException, UnauthorizedException } from '@nestjs/common';
import { ApiErrors, DomainErrorStatuses } from '@app/daemon';
import {
  IncomingMoveGoneError,
  MoveConflictError,
  MoveFailedError,
  MoveRefusedError,
} from './moves.errors';

export const MOVES_ERROR_STATUSES: DomainErrorStatuses = [
  [MoveConflictError, 409],
  [MoveRefusedError, 422],
  [IncomingMoveGoneError, 404],
  [MoveFailedError, 502],
];

/** The incoming move routes' refusals: no or a bad grant (401), a grant for another VM (403). */
export function ApiIncomingMoveErrors(): MethodDecorator & ClassDecorator {
  return ApiErrors(
    MOVES_ERROR_STATUSES,
    {
      name: 'no-grant',
      when: 'No move grant, or one not signed for this node, for another node, or expired.',
      error: new UnauthorizedException('move grant refused: grant expired'),
    },
    {
      name: 'other-vm',
      when: 'The move grant is for another VM.',
      error: new ForbiddenException('the move grant is for another VM, not vm web-1'),
    },
    {
      name: 'refused',
      when: 'This node cannot take the VM as it runs (machine type, CPU model, accelerator).',
      error: new MoveRefusedError(
        "machine: this node's QEMU has no machine type pc-q35-9.1 (the VM runs on it on node node-a): a live move needs the same machine type on both nodes",
      ),
    },
    {
      name: 'gone',
      when: 'No move of the VM to this node is under way.',
      error: new IncomingMoveGoneError('web-1'),
    },
  );
}
