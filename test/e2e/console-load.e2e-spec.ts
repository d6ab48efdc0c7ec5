import request from 'supertest';
import {
  LISTING_AGENT_CALLS,
  LISTING_MIN_INTERVAL_MS,
} from '../../apps/fleet/src/operations/vm-operations.service';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, json } from '../support/stub-agent';

/**
 * Twenty console tabs polling a 1,000-node fleet, in-process with 1,000 stub agents: the
 * listing is shared, so the agents are asked once per LISTING_MIN_INTERVAL_MS whatever the
 * number of tabs, a few dozen at a time, and every node keeps heartbeating meanwhile. (The
 * heartbeat p99 under this load is a figure of `npm run bench`, not a timed test.)
 */

const NODES = 1_000;
const TABS = 20;
/** Polls per tab, one per simulated second (the page refreshes every 2 s: twice as often). */
/** Slow by nature: 1,000 nodes heartbeat six times, and 100 fragments of 3 MB are read. */
const LOAD_TIMEOUT_MS = 180_000;
const ROUNDS = 5;

const nodeId = (index: number): string => `node-${String(index).padStart(4, '0')}`;
const vmId = (index: number): string => `vm-${String(index).padStart(16, '0')}`;

describe('the console on a 1,000-node fleet', () => {
  let fleet: RunningFleet;
  const agents: StubAgent[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  let calls = 0;

  beforeAll(async () => {
    fleet = await startFleet({ ops: true });
    for (let index = 0; index < NODES; index++) {
      agents.push(
        await new StubAgent((call, res) => {
          calls++;
          mostInFlight = Math.max(mostInFlight, ++inFlight);
          // Answered a moment later, so calls made at once overlap and are counted as such.
          setTimeout(() => {
            inFlight--;
            json(res, 200, [
              {
                vm_id: vmId(index),
                state: 'Running',
                desired_state: 'running',
                operation: null,
                restart_count: 0,
                last_exit: null,
                reason: null,
                next_start_at: null,
              },
            ]);
          }, 2);
          expect(call.url).toBe('/v1/vm-life-cycles');
        }).start(),
      );
    }
  }, LOAD_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await fleet.close();
  });

  /** Every node heartbeats once, 50 at a time; the statuses they were answered with. */
  async function everyNodeBeats(): Promise<number[]> {
    const statuses: number[] = [];
    for (let first = 0; first < NODES; first += 50) {
      const batch = agents.slice(first, first + 50).map(async (agent, offset) => {
        const index = first + offset;
        const answer = await fetch(`${fleet.url}/v1/nodes/heartbeat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(
            heartbeat({
              node_id: nodeId(index),
              spawn_port: agent.port,
              vms: [vmRecord(vmId(index))],
            }),
          ),
        });
        await answer.arrayBuffer();
        return answer.status;
      });
      statuses.push(...(await Promise.all(batch)));
    }
    return statuses;
  }

  it(
    'asks every agent once per interval whatever the number of tabs, a few at a time, and drops no node',
    async () => {
      expect(new Set(await everyNodeBeats())).toEqual(new Set([200]));
      const tabs = await Promise.all(
        Array.from({ length: TABS }, async () => {
          const page = await request(fleet.opsUrl).get('/').expect(200);
          return ([] as string[]).concat(page.headers['set-cookie'] ?? [])[0].split(';')[0];
        }),
      );
      calls = 0;
      const beats: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const [fragments, statuses] = await Promise.all([
          Promise.all(
            tabs.map((cookie) =>
              request(fleet.opsUrl).get('/console/fragments/overview').set('Cookie', cookie),
            ),
          ),
          everyNodeBeats(),
        ]);
        beats.push(...statuses);
        for (const fragment of fragments) {
          expect(fragment.status).toBe(200);
          expect(fragment.text.match(/<tr\s+data-vm="/g)).toHaveLength(NODES);
        }
        fleet.clock.advance(1_000);
      }
      // Rounds at 0, 1, ... 4 s: opening the tabs asked the agents at 0 s (not counted), the
      // polls at 2 and 4 s; 100 polls, 2,000 calls, where each poll asking every agent made 100,000.
      expect(LISTING_MIN_INTERVAL_MS).toBe(2_000);
      expect(calls).toBe(2 * NODES);
      expect(mostInFlight).toBeLessThanOrEqual(LISTING_AGENT_CALLS);
      expect(beats).toHaveLength(ROUNDS * NODES);
      expect(new Set(beats)).toEqual(new Set([200]));
      const nodes = await request(fleet.url).get('/v1/nodes').expect(200);
      expect(nodes.body).toHaveLength(NODES);
      const listed = await request(fleet.opsUrl).get('/v1/vms').expect(200);
      expect(
        (listed.body as Array<{ life_cycle: unknown }>).filter(
          ({ life_cycle }) => life_cycle === null,
        ),
      ).toEqual([]);
    },
    LOAD_TIMEOUT_MS,
  );
});
