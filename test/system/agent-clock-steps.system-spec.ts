import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  FLEET_URL,
  ListedNode,
  enrolled,
  eventually,
  listedNodes,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';

jest.setTimeout(60_000);

const WALL_CLOCK_OFFSET = join(__dirname, '../support/wall-clock-offset.cjs');
const NODE_ID = 'stepped-01';
const WG_IP = '127.0.0.2';

/** The heartbeat this node's agent sent just before it was restarted: same boot, host and address. */
function beforeRestart(): object {
  return heartbeat({
    node_id: NODE_ID,
    wg_ip: WG_IP,
    hostname: hostname(),
    boot_id: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    spawn_port: 9204,
    timestamp_utc: new Date().toISOString(),
  });
}

async function node(): Promise<ListedNode | undefined> {
  return (await listedNodes()).find((listed) => listed.node_id === NODE_ID);
}

/**
 * An agent restarted on a machine whose clock was set back 10 min (the same boot): the built
 * controller and agent as real processes, the agent's Date shifted by a preloaded module.
 */
describe('an agent whose clock went back 10 min', () => {
  afterAll(() => stopAllDaemons());

  it('hears that the controller ignored its heartbeat, and its node stays listed and current', async () => {
    await listeningFleetDaemon();
    // What the controller holds from before the restart, kept recent until the agent is up.
    let pumping = true;
    const pump = (async () => {
      while (pumping) {
        await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(beforeRestart()),
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
    const agent = startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: NODE_ID,
      VM_WG_IP: WG_IP,
      VM_HEARTBEAT_INTERVAL_S: '1',
      NODE_OPTIONS: `--require ${WALL_CLOCK_OFFSET}`,
      WALL_CLOCK_OFFSET_MS: String(-600_000),
    });
    try {
      await agent.waitForOutput(
        /WARN.*node stepped-01: the controller answered 200 but ignored the heartbeat stamped \S+: it holds one of this boot \(\S+\) stamped later, \S+\. This machine's clock went back/,
      );
    } finally {
      pumping = false;
      await pump;
    }
    await enrolled(agent);

    // From now on only the agent beats: its heartbeats are taken, every one, well past the 5 s
    // in which the controller orders a boot's heartbeats by their stamps.
    const stoppedPumpingAt = Date.now();
    await eventually(
      'the agent taking over as the only one beating',
      () => Promise.resolve(/takes heartbeats again/.test(agent.output) ? true : undefined),
      5_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const listed = await node();
    expect(listed).toBeDefined();
    expect(Date.parse(listed!.last_heartbeat)).toBeGreaterThan(stoppedPumpingAt + 6_000);
    // Its wall clock is 10 min back; the record shows the controller's receive time.
    expect(Math.abs(Date.parse(listed!.last_heartbeat) - Date.now())).toBeLessThan(3_000);
    const lastWarning = agent.output.lastIndexOf('ignored the heartbeat');
    expect(agent.output.indexOf('takes heartbeats again', lastWarning)).toBeGreaterThan(-1);
  });
});
