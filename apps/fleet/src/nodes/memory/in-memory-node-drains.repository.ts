import { DrainedVm } from '@app/fleet-domain';
import { DRAIN_OUTCOMES_KEPT, NodeDrainRecord, NodeDrains } from '../node-drains.repository';

/** Drains for the in-memory store: one controller; a restart forgets them, as it forgets nodes. */
export class InMemoryNodeDrains extends NodeDrains {
  private readonly drains = new Map<string, NodeDrainRecord>();

  drain(nodeId: string, sinceWallMs: number): Promise<NodeDrainRecord> {
    let record = this.drains.get(nodeId);
    if (!record) {
      record = { sinceWallMs, vms: [] };
      this.drains.set(nodeId, record);
    }
    return Promise.resolve(copy(record));
  }

  undrain(nodeId: string): Promise<boolean> {
    return Promise.resolve(this.drains.delete(nodeId));
  }

  find(nodeId: string): Promise<NodeDrainRecord | undefined> {
    const record = this.drains.get(nodeId);
    return Promise.resolve(record && copy(record));
  }

  drainedSince(): Promise<Map<string, number>> {
    return Promise.resolve(
      new Map([...this.drains].map(([nodeId, record]) => [nodeId, record.sinceWallMs])),
    );
  }

  recordOutcomes(nodeId: string, vms: readonly DrainedVm[]): Promise<void> {
    const record = this.drains.get(nodeId);
    if (record) record.vms = vms.slice(-DRAIN_OUTCOMES_KEPT).map((vm) => ({ ...vm }));
    return Promise.resolve();
  }
}

function copy(record: NodeDrainRecord): NodeDrainRecord {
  return { sinceWallMs: record.sinceWallMs, vms: record.vms.map((vm) => ({ ...vm })) };
}
