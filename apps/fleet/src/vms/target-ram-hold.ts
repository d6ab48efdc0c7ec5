import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import {
  NodeState,
  RAM_HOLD_MARGIN_MS,
  RamHoldRequest,
  holdRam,
  liveSince,
  releaseHold,
} from '@app/fleet-domain';
import { NodesRepository } from '../nodes/nodes.repository';
import { PlacementRefusedError } from './vms.errors';

/** What a restore or a move holds on its chosen target, besides the hold's own id and times. */
export type TargetHold = Omit<RamHoldRequest, 'holdId' | 'nowMs' | 'expiresAtMs'> & {
  /** How long the agent may take: the hold lasts that long, plus the margin, from now. */
  agentTimeoutMs: number;
};

/**
 * The RAM of a VM that a restore or a move brings to `target` held there as a create's is, so
 * creates placed meanwhile leave it room. Refused (no-capacity) when concurrent creates took the
 * room since placement chose the node. Returns the hold's id.
 */
export async function holdRamOnTarget(
  nodes: NodesRepository,
  nowMs: number,
  target: NodeState,
  { agentTimeoutMs, ...hold }: TargetHold,
): Promise<string> {
  const holdId = randomUUID();
  const held = await nodes.update(
    target.node_id,
    holdRam(
      { ...hold, holdId, nowMs, expiresAtMs: nowMs + agentTimeoutMs + RAM_HOLD_MARGIN_MS },
      liveSince(nowMs),
    ),
  );
  if (!held) {
    throw new PlacementRefusedError(
      'no-capacity',
      `node ${target.node_id} lost its room to concurrent creates; try again`,
    );
  }
  return holdId;
}

/** The hold given back; a failure only logged (the hold ends by itself at its deadline). */
export async function giveBackHold(
  nodes: NodesRepository,
  logger: Logger,
  target: NodeState,
  holdId: string,
): Promise<void> {
  await nodes
    .update(target.node_id, releaseHold(holdId))
    .catch((error: Error) =>
      logger.warn(`node ${target.node_id}: RAM hold not given back (${error.message})`),
    );
}
