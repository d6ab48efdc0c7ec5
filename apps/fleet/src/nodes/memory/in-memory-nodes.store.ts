import { SystemClock } from '@app/daemon';
import { NodesStore } from '../nodes-store';
import { InMemoryKeyClaims } from './in-memory-key-claims.repository';
import { InMemoryNodesRepository } from './in-memory-nodes.repository';

/** The documented default: the fleet lives in this process, on its own clock. */
export const IN_MEMORY_NODES_STORE: NodesStore = {
  name: 'memory',
  isChosenBy: () => true,
  open: () => ({
    repository: new InMemoryNodesRepository(),
    keyClaims: new InMemoryKeyClaims(),
    clock: new SystemClock(),
    close: () => Promise.resolve(),
  }),
};
