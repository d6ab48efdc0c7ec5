import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonLogLine } from '@app/daemon';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  listedNodes,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { dashboardQueries } from '../support/grafana-dashboard';
import { PrometheusServer, SHIPPED_RULES } from '../support/prometheus-server';
import { sampleValue } from '../support/prometheus-text';
import { freePort } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Metrics and JSON logs as an operator gets them: the built controller (on 9203) and an agent as
 * real processes, /metrics checked by promtool and scraped by a real Prometheus (Debian package
 * `prometheus`) that loads the alert rules and answers every query of the Grafana dashboard,
 * every log line parsed. Run under the shared lock: it binds 9203.
 */
jest.setTimeout(60_000);

const NODE_ID = 'observed-01';
const { version: VERSION } = JSON.parse(
  readFileSync(join(__dirname, '../../package.json'), 'utf8'),
) as { version: string };
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

async function get(url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url);
  return { status: response.status, text: await response.text() };
}

interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

function logLines(daemon: Daemon): JsonLogLine[] {
  return daemon.output
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JsonLogLine);
}

describe('metrics and JSON logs of the running daemons', () => {
  let dir: string;
  let fleet: Daemon;
  let agent: Daemon;
  let fleetMetrics: string;
  let agentMetrics: string;
  let agentApi: string;
  let prometheus: PrometheusServer | undefined;

  /** An instant query's result from the spec's Prometheus; rejects on an error answer. */
  async function promQuery(expr: string): Promise<PromSample[]> {
    const { result } = await prometheus!.api<{ result: PromSample[] }>(
      `query?query=${encodeURIComponent(expr)}`,
    );
    return result;
  }

  beforeAll(async () => {
    dir = scratchFolder('observability-');
    const [fleetPort, agentPort, spawnPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    // A blank qcow2 base: enough for QEMU (TCG) to start the VM the dashboard's queries need.
    const baseImage = join(dir, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    fleetMetrics = `127.0.0.1:${fleetPort}`;
    agentMetrics = `127.0.0.1:${agentPort}`;
    agentApi = `http://127.0.0.1:${spawnPort}`;
    // On SIGUSR2 the controller gets a warning of Node's own, which Node prints as text.
    const warn = join(dir, 'warn.js');
    writeFileSync(warn, "process.on('SIGUSR2', () => process.emitWarning('probe warning'));\n");
    fleet = startFleetDaemon({ VM_FLEET_METRICS_ADDR: fleetMetrics, VM_LOG_FORMAT: 'json' }, [
      '-r',
      warn,
    ]);
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    agent = startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: NODE_ID,
      VM_WG_IP: '127.0.0.1',
      VM_SPAWN_PORT: String(spawnPort),
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: join(dir, 'disk'),
      VM_BASE_IMAGE: baseImage,
      VM_METRICS_ADDR: agentMetrics,
      VM_LOG_FORMAT: 'json',
    });
    await eventually(
      `${NODE_ID} listed`,
      async () =>
        (await listedNodes()).some((node) => node.node_id === NODE_ID) ? true : undefined,
      15_000,
    );
  });

  afterAll(async () => {
    await prometheus?.stop();
    await stopAllDaemons();
  });

  it('serves /metrics on both daemons that promtool check metrics passes', async () => {
    for (const address of [fleetMetrics, agentMetrics]) {
      const { status, text } = await get(`http://${address}/metrics`);
      expect(status).toBe(200);
      const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect({ status: check.status, output: check.stdout + check.stderr }).toEqual({
        status: 0,
        output: '',
      });
      expect(sampleValue(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect((await get(`http://${address}/`)).status).toBe(404);
    }
  });

  it("reports the fleet's live nodes and heartbeats, and the agent's RAM and VMs", async () => {
    const fleetText = (await get(`http://${fleetMetrics}/metrics`)).text;
    expect(sampleValue(fleetText, 'ppn_fleet_nodes')).toBe(1);
    expect(sampleValue(fleetText, 'ppn_fleet_heartbeats_total{outcome="joined"}')).toBe(1);
    const agentText = (await get(`http://${agentMetrics}/metrics`)).text;
    expect(sampleValue(agentText, 'ppn_host_ram_total_bytes')).toBeGreaterThan(0);
    expect(sampleValue(agentText, 'ppn_host_vms{state="Running"}')).toBe(0);
    expect(sampleValue(agentText, 'ppn_host_heartbeat_failures_total')).toBe(0);
  });

  it('is scraped by a real Prometheus: both targets up, ppn_fleet_nodes 1', async () => {
    prometheus = await PrometheusServer.start(
      { 'service-vm-fleet': [fleetMetrics], 'service-vm-host': [agentMetrics] },
      [SHIPPED_RULES],
    );
    const { activeTargets } = await prometheus.api<{
      activeTargets: Array<{ scrapeUrl: string }>;
    }>('targets');
    expect(activeTargets.map((target) => target.scrapeUrl).sort()).toEqual(
      [`http://${agentMetrics}/metrics`, `http://${fleetMetrics}/metrics`].sort(),
    );
    const result = await promQuery('ppn_fleet_nodes');
    expect(result.map((sample) => sample.value[1])).toEqual(['1']);
  });

  it('exports each live node and the build of both daemons', async () => {
    const fleetText = (await get(`http://${fleetMetrics}/metrics`)).text;
    const node = (name: string) => sampleValue(fleetText, `${name}{node_id="${NODE_ID}"}`);
    const total = node('ppn_fleet_node_ram_total_bytes')!;
    expect(total).toBeGreaterThan(0);
    expect(node('ppn_fleet_node_ram_available_bytes')).toBeLessThanOrEqual(total);
    expect(node('ppn_fleet_node_heartbeat_age_seconds')).toBeLessThan(5);
    expect(node('ppn_fleet_node_reserved')).toBe(0);
    for (const state of ['Running', 'Stopped', 'Provisioning', 'Error']) {
      expect(
        sampleValue(fleetText, `ppn_fleet_node_vms{node_id="${NODE_ID}",state="${state}"}`),
      ).toBe(0);
    }
    expect(sampleValue(fleetText, `ppn_fleet_build_info{version="${VERSION}"}`)).toBe(1);
    const agentText = (await get(`http://${agentMetrics}/metrics`)).text;
    expect(sampleValue(agentText, `ppn_host_build_info{version="${VERSION}"}`)).toBe(1);
    // The agent's RAM as the controller has it from the heartbeat: one figure, two views.
    expect(total).toBe(sampleValue(agentText, 'ppn_host_ram_total_bytes'));
  });

  it('answers every query of the Grafana dashboard with data, once a VM was placed', async () => {
    const created = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vm_type: 'observed', ram_mb: 64, vcpu_count: 1 }),
    });
    expect(created.status).toBe(201);
    const { vm_id } = (await created.json()) as { vm_id: string };
    try {
      await expectDashboardData(vm_id);
    } finally {
      await fetch(`${FLEET_URL}/v1/vms/${vm_id}`, { method: 'DELETE' });
    }
  });

  /** Every query of the dashboard answered with finite values, once `vmId` runs. */
  async function expectDashboardData(vmId: string): Promise<void> {
    // Running on the node, as the controller's metrics and then Prometheus have it.
    await eventually(
      `${vmId} Running in Prometheus`,
      async () => {
        const running = await promQuery(
          `ppn_fleet_node_vms{node_id="${NODE_ID}",state="Running"} == 1`,
        );
        return running.length === 1 ? true : undefined;
      },
      20_000,
      250,
    );
    // The dispatch lands in the histogram's rate once Prometheus has scraped after it.
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    const answers = await Promise.all(
      dashboardQueries('1m').map(async (query) => {
        const result = await promQuery(query.expr);
        return {
          panel: query.panel,
          refId: query.refId,
          series: result.length,
          finite: result.filter((sample) => Number.isFinite(Number(sample.value[1]))).length,
        };
      }),
    );
    expect(answers.length).toBeGreaterThanOrEqual(10);
    for (const answer of answers) {
      expect({ ...answer, data: answer.series > 0 && answer.finite > 0 }).toEqual({
        ...answer,
        data: true,
      });
    }
  }

  it("drops a dropped node's series, and the alert rule sees the node go", async () => {
    const leaving = 'observed-02';
    const spawnPort = await freePort();
    const second = await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: leaving,
        VM_WG_IP: '127.0.0.1',
        VM_SPAWN_PORT: String(spawnPort),
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(dir, 'disk-02'),
      }),
    );
    const ageOf = `ppn_fleet_node_heartbeat_age_seconds{node_id="${leaving}"}`;
    await eventually(
      `${leaving} in Prometheus`,
      async () => ((await promQuery(ageOf)).length === 1 ? true : undefined),
      10_000,
      250,
    );
    await second.stop();

    // 30 s without a heartbeat, then the sweep (once a second) drops it. Reads stop showing the
    // node at 30 s on their own, up to a second before the sweep counts the drop: wait for both.
    await eventually(
      `${leaving} gone from /metrics and its drop counted`,
      async () => {
        const text = (await get(`http://${fleetMetrics}/metrics`)).text;
        const gone = !text.includes(`node_id="${leaving}"`);
        return gone && (sampleValue(text, 'ppn_fleet_drops_total') ?? 0) > 0 ? text : undefined;
      },
      45_000,
      500,
    ).then((text) => {
      expect(sampleValue(text, 'ppn_fleet_drops_total')).toBe(1);
      expect(sampleValue(text, 'ppn_fleet_nodes')).toBe(1);
      expect(sampleValue(text, `ppn_fleet_node_reserved{node_id="${NODE_ID}"}`)).toBe(0);
    });
    // Prometheus marks the vanished series stale at its next scrape, and the rule sees it go.
    const alert = await eventually(
      `PpnFleetNodeDropped for ${leaving}`,
      async () => {
        if ((await promQuery(ageOf)).length !== 0) return undefined;
        const alerts = await prometheus!.alerts();
        return alerts.find(
          (each) =>
            each.labels.alertname === 'PpnFleetNodeDropped' && each.labels.node_id === leaving,
        );
      },
      10_000,
      250,
    );
    // Pending: it fires after a minute of being gone, which this test does not wait for.
    expect(alert.state).toBe('pending');
    expect(alert.labels.severity).toBe('warning');
    expect(
      await promQuery(`ppn_fleet_node_heartbeat_age_seconds{node_id="${NODE_ID}"}`),
    ).toHaveLength(1);
  }, 90_000);

  it('serves the committed OpenAPI document from the agent, without Swagger UI', async () => {
    const committed = readFileSync(join(__dirname, '../../openapi/vm-host.openapi.json'), 'utf8');
    const served = await get(`${agentApi}/docs-json`);
    expect(served.status).toBe(200);
    expect(JSON.parse(served.text)).toEqual(JSON.parse(committed));
    const page = await get(`${agentApi}/docs`);
    expect(page.text).toContain('href="docs-json"');
  });

  it("writes every log line of both daemons, Node's warnings and the last included, as one JSON object", async () => {
    fleet.process.kill('SIGUSR2');
    await fleet.waitForOutput(/probe warning/);
    await Promise.all([agent.stop(), fleet.stop()]);
    for (const daemon of [fleet, agent]) {
      const lines = logLines(daemon);
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) {
        expect(line.time).toMatch(RFC3339);
        expect(['info', 'warn', 'error', 'debug', 'verbose', 'fatal']).toContain(line.level);
        expect(typeof line.msg).toBe('string');
        expect(typeof line.context).toBe('string');
      }
      expect(lines.at(-1)!.msg).toBe('SIGTERM received, shutting down');
    }
    expect(logLines(fleet).find((line) => line.msg.includes('joined'))).toMatchObject({
      context: 'Nodes',
      node_id: NODE_ID,
    });
    expect(logLines(agent).every((line) => line.node_id === NODE_ID)).toBe(true);
    expect(logLines(fleet).find((line) => line.msg.includes('probe warning'))).toMatchObject({
      level: 'warn',
      context: 'Node',
      msg: 'Warning: probe warning',
    });
  });
});

describe('a configuration error with VM_LOG_FORMAT=json', () => {
  it('is printed as one JSON line too, naming the variable, exit 2', async () => {
    const agent = startAgent({ VM_LOG_FORMAT: 'json', VM_METRICS_ADDR: 'localhost:9100' });
    expect(await agent.waitForExit()).toEqual({ code: 2, signal: null });
    const lines = agent.output.trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]) as JsonLogLine;
    expect(line).toMatchObject({ level: 'error', context: 'service-vm-host' });
    expect(line.msg).toMatch(/^service-vm-host: configuration error: .*VM_METRICS_ADDR must be/);
  });
});
