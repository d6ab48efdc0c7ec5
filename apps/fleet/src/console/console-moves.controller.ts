import { Body, Controller, HttpCode, Param, Post, Req, UseGuards } from '@nestjs/common';
import type { Request } from 'express';
import { OwnCredentials } from '@app/daemon';
import {
  ApiExcludeController,
  MoveVmRequest,
  NodeDrain,
  NodeIdParams,
  VmIdParams,
} from '@app/fleet-domain';
import { NodeDrainService } from '../drains/node-drain.service';
import { VmMoveService } from '../moves/vm-move.service';
import { OperatorOnlyError } from '../tenants/tenants.errors';
import { Outcome } from './console.requests';
import { ConsoleSessionGuard, scopeOf } from './console-session.guard';

/**
 * The web console's Move button (a VM's page) and Drain / Undrain (a node's page), sent by the
 * page's script with the session's CSRF token, over the operations listener's own move and drain
 * services: each answers the outcome in the controller's words. Operator sessions only: a move
 * or a drain is the fleet's, not a tenant's.
 */
@ApiExcludeController()
@OwnCredentials()
@UseGuards(ConsoleSessionGuard)
@Controller()
export class ConsoleMovesController {
  constructor(
    private readonly moves: VmMoveService,
    private readonly drains: NodeDrainService,
  ) {}

  @Post('console/vms/:vm_id/move')
  @HttpCode(200)
  async move(
    @Param() { vm_id }: VmIdParams,
    @Body() request: MoveVmRequest,
    @Req() req: Request,
  ): Promise<Outcome> {
    operatorOnly(req, 'moving a VM');
    const moved = await this.moves.move(vm_id, request);
    const paused = moved.pause_ms === null ? '' : `, guest paused ${moved.pause_ms} ms`;
    return {
      message: `vm ${vm_id} moved ${moved.mode} from node ${moved.from_node_id} to node ${moved.vm.node_id} in ${(moved.total_ms / 1000).toFixed(1)} s${paused}`,
    };
  }

  @Post('console/nodes/:node_id/drain')
  @HttpCode(200)
  async drain(@Param() { node_id }: NodeIdParams, @Req() req: Request): Promise<Outcome> {
    operatorOnly(req, 'draining a node');
    return { message: drainSummary(await this.drains.drain(node_id)) };
  }

  @Post('console/nodes/:node_id/undrain')
  @HttpCode(200)
  async undrain(@Param() { node_id }: NodeIdParams, @Req() req: Request): Promise<Outcome> {
    operatorOnly(req, 'undraining a node');
    await this.drains.undrain(node_id);
    return { message: `node ${node_id} undrained: placement may choose it again` };
  }
}

function operatorOnly(req: Request, what: string): void {
  const tenant = scopeOf(req);
  if (tenant !== undefined) throw new OperatorOnlyError(tenant, what);
}

/** A drain's answer in one line: each VM moved (where) or left (why). */
export function drainSummary(drain: NodeDrain): string {
  const moved = drain.vms.filter((vm) => vm.outcome === 'moved');
  const left = drain.vms.filter((vm) => vm.outcome !== 'moved');
  const parts = [
    `node ${drain.node_id} drained: ${moved.length} VM(s) moved${moved.length === 0 ? '' : ` (${moved.map((vm) => `${vm.vm_id} ${vm.mode} to ${vm.to_node_id}`).join(', ')})`}`,
  ];
  if (left.length > 0) {
    parts.push(
      `${left.length} left on it (${left.map((vm) => `${vm.vm_id}: ${vm.message}`).join('; ')})`,
    );
  }
  return parts.join(', ');
}
