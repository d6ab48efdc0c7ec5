import { MonotonicClock } from '@app/daemon';
import { NodesStore } from '../nodes-store';
import { InMemoryKeyClaims } from './in-memory-key-claims.repository';
import { InMemoryNodesRepository } from './in-memory-nodes.repository';
import { InMemoryVmMoves } from './in-memory-vm-moves.repository';
import { InMemoryNodeDrains } from './in-memory-node-drains.repository';

/**
 * The documented default: the fleet lives in this process, on its own clock. That clock is
 * monotonic (anchored to the wall clock at start): staleness, the 30 s drop, hold deadlines and
 * missed beats are durations, and a wall clock stepped either way must not stretch or cut them.
 * `last_heartbeat` and `last_updated` still show the wall clock (Clock.wallNow).
 */
export const IN_MEMORY_NODES_STORE: NodesStore = {
  name: 'memory',
  isChosenBy: () => true,
  open: () => ({
    repository: new InMemoryNodesRepository(),
    keyClaims: new InMemoryKeyClaims(),
    vmMoves: new InMemoryVmMoves(),
    nodeDrains: new InMemoryNodeDrains(),
    clock: new MonotonicClock(),
    close: () => Promise.resolve(),
  }),
};
