import { DrainedVm } from '@app/fleet-domain';
import {
  NodeDrainRecord,
  NodeDrains,
  decodeOutcomes,
  decodeSince,
  encodeOutcomes,
  encodeSince,
} from '../node-drains.repository';
import { EtcdClient } from './etcd.client';

/** `ppn-fleet/node-drain/<node id>`: since ms; `ppn-fleet/node-drain-outcomes/<node id>`: JSON. */
const DRAIN_PREFIX = 'ppn-fleet/node-drain/';
const OUTCOMES_PREFIX = 'ppn-fleet/node-drain-outcomes/';

/** Drains in the etcd every controller shares: one prefix read per placement. */
export class EtcdNodeDrains extends NodeDrains {
  constructor(private readonly etcd: EtcdClient) {
    super();
  }

  async drain(nodeId: string, sinceWallMs: number): Promise<NodeDrainRecord> {
    const key = DRAIN_PREFIX + nodeId;
    // Created only when absent (create revision 0), its old outcomes cleared with it.
    const { succeeded } = await this.etcd.txn(
      [{ key, target: 'CREATE', result: 'EQUAL', revision: 0 }],
      [
        { put: { key, value: encodeSince(sinceWallMs) } },
        { deleteRange: { key: OUTCOMES_PREFIX + nodeId } },
      ],
    );
    if (succeeded) return { sinceWallMs, vms: [] };
    return (await this.find(nodeId)) ?? { sinceWallMs, vms: [] };
  }

  async undrain(nodeId: string): Promise<boolean> {
    const { ranges } = await this.etcd.txn(
      [],
      [
        { range: { key: DRAIN_PREFIX + nodeId } },
        { deleteRange: { key: DRAIN_PREFIX + nodeId } },
        { deleteRange: { key: OUTCOMES_PREFIX + nodeId } },
      ],
    );
    return ranges[0].length > 0;
  }

  async find(nodeId: string): Promise<NodeDrainRecord | undefined> {
    const { ranges } = await this.etcd.txn(
      [],
      [{ range: { key: DRAIN_PREFIX + nodeId } }, { range: { key: OUTCOMES_PREFIX + nodeId } }],
    );
    const sinceWallMs = decodeSince(ranges[0][0]?.value);
    if (sinceWallMs === undefined) return undefined;
    return { sinceWallMs, vms: decodeOutcomes(ranges[1][0]?.value) };
  }

  async drainedSince(): Promise<Map<string, number>> {
    const { kvs } = await this.etcd.rangePrefix(DRAIN_PREFIX);
    const drained = new Map<string, number>();
    for (const kv of kvs) {
      const since = decodeSince(kv.value);
      if (since !== undefined) drained.set(kv.key.slice(DRAIN_PREFIX.length), since);
    }
    return drained;
  }

  async recordOutcomes(nodeId: string, vms: readonly DrainedVm[]): Promise<void> {
    await this.etcd.txn(
      [],
      [{ put: { key: OUTCOMES_PREFIX + nodeId, value: encodeOutcomes(vms) } }],
    );
  }
}
