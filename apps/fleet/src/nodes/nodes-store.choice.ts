import { FleetConfig } from '../config/fleet.config';
import { IN_MEMORY_NODES_STORE } from './memory/in-memory-nodes.store';
import { NodesStore } from './nodes-store';
import { REDIS_NODES_STORE } from './redis/redis-nodes.store';
import { ETCD_NODES_STORE } from './etcd/etcd-nodes.store';

/**
 * Every store, in the order they are considered: the first the configuration asks for is
 * the one opened. Memory, the documented default, asks for nothing and comes last. A new
 * store is a folder beside memory/, redis/ and etcd/ with its NodesStore, and one line here.
 */
export const NODES_STORES: readonly NodesStore[] = [
  REDIS_NODES_STORE,
  ETCD_NODES_STORE,
  IN_MEMORY_NODES_STORE,
];

/** The store `config` asks for. */
export function chooseNodesStore(
  config: FleetConfig,
  stores: readonly NodesStore[] = NODES_STORES,
): NodesStore {
  const chosen = stores.find((store) => store.isChosenBy(config));
  if (!chosen)
    throw new Error(
      `no fleet state store is configured (known: ${stores.map((store) => store.name).join(', ')})`,
    );
  return chosen;
}
