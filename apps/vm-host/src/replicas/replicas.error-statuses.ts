import { ForbiddenException, UnauthorizedException } from '@nestjs/common';
import { ApiErrors, DomainErrorStatuses } from '@app/daemon';
import {
  ReplicaConflictError,
  ReplicaNoRoomError,
  ReplicaNotHeldError,
  ReplicaTransferGoneError,
  ReplicaTransferInvalidError,
} from './replicas.errors';
import { ReplicaGrantStaleError } from '../vms/copies/replica-grant-floor';

export const REPLICAS_ERROR_STATUSES: DomainErrorStatuses = [
  [ReplicaConflictError, 409],
  [ReplicaTransferGoneError, 404],
  [ReplicaTransferInvalidError, 422],
  [ReplicaNoRoomError, 507],
  [ReplicaGrantStaleError, 403],
  [ReplicaNotHeldError, 404],
];

/** The replica routes' refusals: no or a bad grant (401), a grant for another VM (403), and theirs. */
export function ApiReplicasErrors(): MethodDecorator & ClassDecorator {
  return ApiErrors(
    REPLICAS_ERROR_STATUSES,
    {
      name: 'no-grant',
      when: 'No copy grant, or one not signed for this node, for another node, or expired.',
      error: new UnauthorizedException('copy grant refused: grant expired'),
    },
    {
      name: 'other-vm',
      when: 'The copy grant is for another VM.',
      error: new ForbiddenException('the copy grant is for another VM, not vm web-1'),
    },
    {
      name: 'conflict',
      when: 'The transfer does not add to the copy held (another chain, place, or offset).',
      error: new ReplicaConflictError('send a full copy'),
    },
    {
      name: 'gone',
      when: 'No such transfer under way.',
      error: new ReplicaTransferGoneError('web-1', '20261205T041700Z-3f2a.1'),
    },
    {
      name: 'invalid',
      when: 'A chunk or file that is not what was announced, or not a sound qcow2 image.',
      error: new ReplicaTransferInvalidError('a chunk needs a Content-Length'),
    },
    {
      name: 'no-room',
      when: 'The copy does not fit in VM_DISK_DIR beyond its reserve.',
      error: new ReplicaNoRoomError('web-1', 2e9, 1e9),
    },
  );
}
