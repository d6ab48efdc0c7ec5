import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigurationError, MonotonicClock } from '@app/daemon';
import { DEFAULT_FENCE_AFTER_S, MAX_VM_COPIES } from '@app/fleet-domain';
import { DEFAULT_FLEET_COPIES } from '../../config/fleet.config';
import { NodesStore } from '../nodes-store';
import { StoreUnavailableError } from '../store-unavailable.error';
import { EtcdClient } from './etcd.client';
import { EtcdKeyClaims } from './etcd-key-claims.repository';
import { EtcdLeaderElection } from './etcd-leader-election';
import { EtcdNodeLeases } from './etcd-node-leases';
import { EtcdNodesRepository } from './etcd-nodes.repository';
import { EtcdVmMoves } from './etcd-vm-moves.repository';
import { EtcdNodeDrains } from './etcd-node-drains.repository';
import { agreeOnFleetSetting } from './etcd-fleet-settings';
import { EtcdCopyGrants } from './etcd-copy-grants';

/**
 * Fleet state shared in etcd (VM_FLEET_ETCD_ENDPOINTS). etcd has no TIME: each controller
 * times receive times, staleness and hold deadlines on its own monotonic clock anchored to its
 * wall clock at start (as in memory), so controllers sharing etcd agree as closely as their
 * machines' clocks do (NTP: milliseconds, against a 30 s staleness); claims end by etcd leases,
 * which etcd's leader times for everyone (ARCHITECTURE.md).
 */
export const ETCD_NODES_STORE: NodesStore = {
  name: 'etcd',
  isChosenBy: (config) => config.etcdEndpoints !== undefined,
  open: (config) => {
    const client = new EtcdClient({
      endpoints: config.etcdEndpoints!,
      username: config.etcdUsername,
      password: config.etcdPassword,
      tls: { ca: config.etcdCa, cert: config.etcdCert, key: config.etcdKey },
    });
    const clock = new MonotonicClock();
    // Unique per process: a restarted controller campaigns anew, never mistakes the old key for its own.
    const controllerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    return {
      repository: new EtcdNodesRepository(client),
      keyClaims: new EtcdKeyClaims(client),
      vmMoves: new EtcdVmMoves(client),
      nodeDrains: new EtcdNodeDrains(client),
      clock,
      nodeLeases: new EtcdNodeLeases(client, config.fenceAfterS ?? DEFAULT_FENCE_AFTER_S),
      leadership: new EtcdLeaderElection(client, clock, controllerId),
      copyGrants: new EtcdCopyGrants(client, clock),
      ready: async () => {
        try {
          await client.check();
          // One default copy count per fleet: the agents fence, and recovery restores, by it.
          await agreeOnFleetSetting(client, {
            variable: 'VM_FLEET_COPIES',
            value: String(config.copies ?? DEFAULT_FLEET_COPIES),
            valid: (stored) => /^\d$/.test(stored) && Number(stored) <= MAX_VM_COPIES,
            why: 'the agents fence, and the leader recovers, the VMs without copies of their own by it',
          });
        } catch (error) {
          if (!(error instanceof StoreUnavailableError)) throw error;
          throw new ConfigurationError(
            `VM_FLEET_ETCD_ENDPOINTS: ${error.message}; the controller does not start without its store`,
          );
        }
      },
      close: () => {
        client.close();
        return Promise.resolve();
      },
    };
  },
};
