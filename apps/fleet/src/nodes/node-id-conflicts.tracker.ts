import { NODE_STALE_AFTER_MS, NodeSpeaker } from '@app/fleet-domain';

/** Two agents taking one node id from each other. */
export interface NodeIdConflict {
  node_id: string;
  /** The agent that took the id back, then the one it took it from. */
  agents: [NodeSpeaker, NodeSpeaker];
  /** When it began and when the last take-over was (Clock.now). */
  since_ms: number;
  last_ms: number;
  takeovers: number;
}

export type TakeOverMeaning =
  /** A new agent (another boot, another host) now speaks for the id: no conflict. */
  | { kind: 'handover' }
  /** The id went back to an agent that held it moments ago: two agents at once; warn once. */
  | { kind: 'conflict-began'; conflict: NodeIdConflict }
  /** One more take-over of a conflict already warned about. */
  | { kind: 'conflict-continues' };

/**
 * A take-over back to an agent that held the id less than this ago means both agents are
 * alive; a conflict with no take-over for this long is over. Twice the 30 s liveness: an agent
 * beating every 25 s still shows.
 */
const CONFLICT_WINDOW_MS = 2 * NODE_STALE_AFTER_MS;
/** Earlier holders remembered per node id: a few agents, not any number of forged boots. */
const HOLDERS_KEPT = 8;

interface NodeIdHistory {
  /** Agents that lately lost the id to a take-over, by identity, with when they lost it. */
  holders: Map<string, { speaker: NodeSpeaker; lost_at_ms: number }>;
  conflict?: NodeIdConflict;
}

/**
 * Tells a node id that changed hands once (an agent rebooted or the host was replaced) from one
 * used by two live agents at once, which take it from each other at every heartbeat: the second
 * kind is warned about once per episode, not once per beat. Kept by each controller for what it
 * sees (take-overs are rare: an entry lives 60 s past its last one).
 */
export class NodeIdConflicts {
  private readonly histories = new Map<string, NodeIdHistory>();

  /** `current` took `nodeId` over from `previous` at `atMs`. */
  noteTakeOver(
    nodeId: string,
    previous: NodeSpeaker,
    current: NodeSpeaker,
    atMs: number,
  ): TakeOverMeaning {
    let history = this.histories.get(nodeId);
    if (!history) {
      history = { holders: new Map() };
      this.histories.set(nodeId, history);
    }
    forgetOldHolders(history, atMs);
    history.holders.delete(identity(previous));
    history.holders.set(identity(previous), { speaker: previous, lost_at_ms: atMs });
    if (history.holders.size > HOLDERS_KEPT) {
      history.holders.delete(history.holders.keys().next().value!);
    }
    const conflict = history.conflict;
    if (conflict && atMs - conflict.last_ms <= CONFLICT_WINDOW_MS) {
      conflict.last_ms = atMs;
      conflict.takeovers += 1;
      return { kind: 'conflict-continues' };
    }
    if (!history.holders.has(identity(current))) {
      history.conflict = undefined;
      return { kind: 'handover' };
    }
    history.conflict = {
      node_id: nodeId,
      agents: [current, previous],
      since_ms: atMs,
      last_ms: atMs,
      takeovers: 1,
    };
    return { kind: 'conflict-began', conflict: history.conflict };
  }

  /** Ends the conflicts with no take-over for 60 s at `nowMs`, and forgets what is older. */
  endQuiet(nowMs: number): NodeIdConflict[] {
    const ended: NodeIdConflict[] = [];
    for (const [nodeId, history] of this.histories) {
      if (history.conflict && nowMs - history.conflict.last_ms > CONFLICT_WINDOW_MS) {
        ended.push(history.conflict);
        history.conflict = undefined;
      }
      forgetOldHolders(history, nowMs);
      if (!history.conflict && history.holders.size === 0) this.histories.delete(nodeId);
    }
    return ended;
  }
}

function forgetOldHolders(history: NodeIdHistory, nowMs: number): void {
  for (const [key, holder] of history.holders) {
    if (nowMs - holder.lost_at_ms > CONFLICT_WINDOW_MS) history.holders.delete(key);
  }
}

function identity(speaker: NodeSpeaker): string {
  return JSON.stringify([speaker.boot_id, speaker.wg_ip, speaker.hostname]);
}
