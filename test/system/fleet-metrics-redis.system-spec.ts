import { VmState } from '@app/fleet-domain';
import { FLEET_URL, eventually, startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { sampleValue } from '../support/prometheus-text';
import { RedisServer, freePort, stopAllRedisServers } from '../support/redis-server';

/**
 * The controller's per-node gauges with its state in Redis (real redis-server): read from the
 * store at each scrape as with the memory store (fleet-metrics.service.spec.ts), and gone, with
 * ppn_fleet_nodes NaN, while Redis is down. Binds 9203: run isolated (test/isolated.sh).
 */
jest.setTimeout(60_000);

const MIB = 1024 * 1024;

async function postHeartbeat(body: object): Promise<number> {
  const response = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return response.status;
}

describe('per-node metrics of a controller on Redis', () => {
  let redis: RedisServer;
  let metrics: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    metrics = `127.0.0.1:${await freePort()}`;
    const fleet = startFleetDaemon({
      VM_FLEET_REDIS_URL: redis.url,
      VM_FLEET_METRICS_ADDR: metrics,
    });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    // It may listen before its connection to Redis is ready (a loaded machine): until then every
    // state route answers 503, so wait for the line that says fleet state is shared.
    await fleet.waitForOutput(/Redis at \S+ (connected|restored): fleet state is shared/);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await stopAllRedisServers();
  });

  const scrape = async (): Promise<string> => (await fetch(`http://${metrics}/metrics`)).text();

  it("shows each node's RAM, VMs by state, heartbeat age and reservation from the store", async () => {
    expect(
      await postHeartbeat(
        heartbeat({
          node_id: 'redis-n1',
          ram_total_mb: 16384,
          ram_used_mb: 4096,
          vms: [
            vmRecord('vm-r1'),
            vmRecord('vm-r2'),
            vmRecord('vm-r3', { state: VmState.Stopped }),
          ],
        }),
      ),
    ).toBe(200);
    expect(
      await postHeartbeat(heartbeat({ node_id: 'redis-n2', ram_total_mb: 8192, reserved: true })),
    ).toBe(200);

    const text = await scrape();
    const value = (sample: string) => sampleValue(text, sample);
    expect(value('ppn_fleet_nodes')).toBe(2);
    expect(value('ppn_fleet_node_ram_total_bytes{node_id="redis-n1"}')).toBe(16384 * MIB);
    expect(value('ppn_fleet_node_ram_available_bytes{node_id="redis-n1"}')).toBe(12288 * MIB);
    expect(value('ppn_fleet_node_ram_available_bytes{node_id="redis-n2"}')).toBe(4096 * MIB);
    expect(value('ppn_fleet_node_vms{node_id="redis-n1",state="Running"}')).toBe(2);
    expect(value('ppn_fleet_node_vms{node_id="redis-n1",state="Stopped"}')).toBe(1);
    expect(value('ppn_fleet_node_vms{node_id="redis-n2",state="Running"}')).toBe(0);
    expect(value('ppn_fleet_node_reserved{node_id="redis-n1"}')).toBe(0);
    expect(value('ppn_fleet_node_reserved{node_id="redis-n2"}')).toBe(1);
    const age = value('ppn_fleet_node_heartbeat_age_seconds{node_id="redis-n1"}')!;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(5);
    expect(text).toMatch(/^ppn_fleet_build_info\{version="[^"]+"\} 1$/m);
  });

  it('shows no node, and NaN live nodes, while Redis is down; the rest still scrapes', async () => {
    await redis.stop();
    const text = await eventually(
      'a scrape without Redis',
      async () => {
        const scraped = await scrape();
        return Number.isNaN(sampleValue(scraped, 'ppn_fleet_nodes')) ? scraped : undefined;
      },
      15_000,
      250,
    );
    expect(text).not.toMatch(/^ppn_fleet_node_\w+\{node_id=/m);
    expect(sampleValue(text, 'ppn_fleet_heartbeats_total{outcome="joined"}')).toBe(2);
  });
});
