import { VmMove, VmMoves, decodeVmMove, encodeVmMove } from '../vm-moves.repository';
import { EtcdClient } from './etcd.client';

/** One key per move: `ppn-fleet/vm-move/<vm id>`, value encodeVmMove. */
const MOVE_PREFIX = 'ppn-fleet/vm-move/';

/** Moves in the etcd every controller shares: one transaction of reads per heartbeat listing VMs. */
export class EtcdVmMoves extends VmMoves {
  constructor(private readonly etcd: EtcdClient) {
    super();
  }

  async record(vmId: string, move: VmMove): Promise<void> {
    await this.etcd.txn([], [{ put: { key: MOVE_PREFIX + vmId, value: encodeVmMove(move) } }]);
  }

  async movesOf(vmIds: readonly string[]): Promise<Map<string, VmMove>> {
    const found = new Map<string, VmMove>();
    if (vmIds.length === 0) return found;
    const { ranges } = await this.etcd.txn(
      [],
      vmIds.map((vmId) => ({ range: { key: MOVE_PREFIX + vmId } })),
    );
    ranges.forEach((kvs, index) => {
      const move = decodeVmMove(kvs[0]?.value);
      if (move) found.set(vmIds[index], move);
    });
    return found;
  }
}
