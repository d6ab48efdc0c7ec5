import type { HeartbeatAnswer, NodeHeartbeat } from '@app/fleet-domain';
import { Daemon, FLEET_MAIN } from './daemons';
import type { EtcdServer } from './etcd-server';
import { heartbeat } from './heartbeats';
import type { TestHost } from './netns';

/**
 * Several built controllers on one real etcd, each on a test host (network namespace) of its
 * own, listening on its port 9203 there (etcd-*.system-spec.ts): started, their leader found,
 * heartbeats sent to one of them.
 */
export class EtcdControllers {
  /** The controller running on each host, the last one started there. */
  readonly on = new Map<TestHost, Daemon>();

  constructor(private readonly etcd: EtcdServer) {}

  /** A controller on `host`, sharing its state in the etcd, once it listens; `env` over the rest. */
  async start(host: TestHost, env: NodeJS.ProcessEnv = {}): Promise<Daemon> {
    const daemon = new Daemon(
      FLEET_MAIN,
      { VM_FLEET_ETCD_ENDPOINTS: `http://${host.hostAddress}:${this.etcd.port}`, ...env },
      [],
      [],
      host.name,
    );
    this.on.set(host, daemon);
    await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd at /);
    return daemon;
  }

  /** The first of `among` (all, unless said) to say it leads, within `timeoutMs`; `at`: when. */
  leader(
    timeoutMs: number,
    among: Array<[TestHost, Daemon]> = [...this.on.entries()],
  ): Promise<{ host: TestHost; daemon: Daemon; at: number }> {
    return Promise.any(
      among.map(([host, daemon]) =>
        daemon
          .waitForOutput(/\[Leadership\] controller \S+ is the leader/, timeoutMs)
          .then((at) => ({ host, daemon, at })),
      ),
    );
  }

  /** The controller on another host than `host` (of two started). */
  other(host: TestHost): [TestHost, Daemon] {
    const other = [...this.on.entries()].find(([each]) => each !== host);
    if (!other) throw new Error(`no controller but the one on ${host.name}`);
    return other;
  }
}

/** The controller's base URL on `host`. */
export const controllerUrl = (host: TestHost): string => `http://${host.address}:9203`;

/** A heartbeat (a node of 64 GiB, now, with `fields`) to the controller on `host`: its answer. */
export async function heartbeatTo(
  host: TestHost,
  fields: Partial<NodeHeartbeat> & { node_id: string },
): Promise<HeartbeatAnswer> {
  const response = await fetch(`${controllerUrl(host)}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      heartbeat({ ram_total_mb: 65_536, timestamp_utc: new Date().toISOString(), ...fields }),
    ),
  });
  if (response.status !== 200) {
    throw new Error(`heartbeat of ${fields.node_id} answered ${response.status}`);
  }
  return (await response.json()) as HeartbeatAnswer;
}
