import { VmMove, VmMoves } from '../vm-moves.repository';

/** Moves kept at most; beyond, the oldest go first (restores are an operator's, and rare). */
const MOVES_KEPT = 100_000;

/** Moves for the in-memory store: one controller; a restart forgets them, as it forgets nodes. */
export class InMemoryVmMoves extends VmMoves {
  private readonly moves = new Map<string, VmMove>();

  record(vmId: string, move: VmMove): Promise<void> {
    this.moves.delete(vmId);
    this.moves.set(vmId, move);
    for (const oldest of this.moves.keys()) {
      if (this.moves.size <= MOVES_KEPT) break;
      this.moves.delete(oldest);
    }
    return Promise.resolve();
  }

  override noneRecorded(): boolean {
    return this.moves.size === 0;
  }

  movesOf(vmIds: readonly string[]): Promise<Map<string, VmMove>> {
    const found = new Map<string, VmMove>();
    for (const vmId of vmIds) {
      const move = this.moves.get(vmId);
      if (move) found.set(vmId, move);
    }
    return Promise.resolve(found);
  }
}
