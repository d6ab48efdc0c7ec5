import { VmMove, VmMoves, decodeVmMove, encodeVmMove } from '../vm-moves.repository';
import { RedisConnection } from './redis-connection';

/** One hash for every move: field vm id, value encodeVmMove. */
const MOVES_KEY = 'ppn-fleet:vm-moves';

/** Moves in the Redis every controller shares: one HMGET per heartbeat that lists VMs. */
export class RedisVmMoves extends VmMoves {
  constructor(private readonly connection: RedisConnection) {
    super();
  }

  async record(vmId: string, move: VmMove): Promise<void> {
    await this.connection.run(() =>
      this.connection.client.hset(MOVES_KEY, vmId, encodeVmMove(move)),
    );
  }

  async movesOf(vmIds: readonly string[]): Promise<Map<string, VmMove>> {
    const found = new Map<string, VmMove>();
    if (vmIds.length === 0) return found;
    const values = await this.connection.run(() =>
      this.connection.client.hmget(MOVES_KEY, ...vmIds),
    );
    values.forEach((value, index) => {
      const move = decodeVmMove(value);
      if (move) found.set(vmIds[index], move);
    });
    return found;
  }
}
