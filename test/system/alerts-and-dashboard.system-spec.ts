import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dashboardQueries, readDashboard } from '../support/grafana-dashboard';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The alert rules (deploy/prometheus) and the Grafana dashboard (deploy/grafana) as an operator
 * loads them, checked by promtool (Debian package `prometheus`, installed by .ci/run). That the
 * dashboard's queries return data from real daemons is observability.system-spec.ts's part.
 */
const RULES_DIR = join(__dirname, '../../deploy/prometheus');
const RULES = join(RULES_DIR, 'ppn-fleet.rules.yml');

function promtool(args: string[], cwd?: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { encoding: 'utf8', cwd });
  if (result.error) {
    throw new Error(`promtool cannot run (${result.error.message}): install Debian's prometheus`);
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe('the alert rules', () => {
  it('pass promtool check rules, every rule an alert of the ppn-fleet group', () => {
    const check = promtool(['check', 'rules', RULES]);
    expect(check).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') as string });
    const alerts = [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map(
      (match) => match[1],
    );
    expect(check.output).toContain(`SUCCESS: ${alerts.length} rules found`);
    expect(alerts).toEqual(
      expect.arrayContaining([
        'PpnFleetNodeDropped',
        'PpnFleetRamNearlyFull',
        'PpnFleetPlacementsRefused',
        'PpnFleetAgentsFailing',
        'PpnFleetAgentHeartbeatsFailing',
        'PpnFleetVmCrashLoop',
        'PpnFleetVmPausedDiskFull',
        'PpnFleetNodeIdTakenOver',
        'PpnFleetSilentNodeVms',
        'PpnFleetVmCopyStale',
        'PpnFleetControllerDown',
        'PpnFleetAgentDown',
      ]),
    );
  });

  it('pass their unit tests (promtool test rules), which test every alert', () => {
    const tests = readFileSync(join(RULES_DIR, 'ppn-fleet.rules.test.yml'), 'utf8');
    const alerts = [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)];
    for (const [, alert] of alerts) expect(tests).toContain(`alertname: ${alert}\n`);
    expect(promtool(['test', 'rules', 'ppn-fleet.rules.test.yml'], RULES_DIR)).toEqual({
      status: 0,
      output: expect.stringContaining('SUCCESS') as string,
    });
  });
});

describe('the Grafana dashboard', () => {
  it("has a panel for each of the operator's questions, every one on the chosen Prometheus", () => {
    const dashboard = readDashboard();
    expect(dashboard.uid).toBe('ppn-fleet');
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    // Grafana's import asks for a Prometheus data source (an input), and the datasource variable
    // starts on the one chosen: the import puts its uid wherever ${DS_PROMETHEUS} is written.
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({
        name: 'DS_PROMETHEUS',
        type: 'datasource',
        pluginId: 'prometheus',
      }),
    ]);
    expect(dashboard.templating.list.find(({ name }) => name === 'datasource')?.current).toEqual(
      expect.objectContaining({ value: '${DS_PROMETHEUS}' }),
    );
    expect(dashboard.__requires).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'datasource', id: 'prometheus' }),
        ...[...new Set(dashboard.panels.map((panel) => panel.type))].map((type) =>
          expect.objectContaining({ type: 'panel', id: type }),
        ),
      ]),
    );
    const prometheus = { type: 'prometheus', uid: '${datasource}' };
    for (const panel of dashboard.panels) {
      expect({ panel: panel.title, datasource: panel.datasource }).toEqual({
        panel: panel.title,
        datasource: prometheus,
      });
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const target of panel.targets) expect(target.datasource).toEqual(prometheus);
    }
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const queries = dashboardQueries().map((query) => query.expr);
    for (const metric of [
      'ppn_fleet_nodes',
      'ppn_fleet_node_ram_available_bytes',
      'ppn_fleet_node_vms',
      'ppn_fleet_heartbeats_total',
      'ppn_fleet_placements_total',
      'ppn_fleet_dispatch_duration_seconds_bucket',
      'ppn_fleet_sweep_duration_seconds_bucket',
      'ppn_host_ram_committed_bytes',
      'ppn_host_ram_total_bytes',
      'ppn_fleet_vms_without_copy',
    ]) {
      expect({ metric, queried: queries.some((expr) => expr.includes(metric)) }).toEqual({
        metric,
        queried: true,
      });
    }
  });

  it('lays its panels out on the 24-column grid without overlaps', () => {
    const boxes = readDashboard().panels.map((panel) => ({ title: panel.title, ...panel.gridPos }));
    for (const box of boxes) expect(box.x + box.w).toBeLessThanOrEqual(24);
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
        expect({ a: a.title, b: b.title, overlap }).toEqual({
          a: a.title,
          b: b.title,
          overlap: false,
        });
      }
    }
  });

  it('asks only valid PromQL: every query passes promtool as a recording rule', () => {
    // promtool parses (and type-checks) each expression of a rules file offline.
    const rules = join(scratchFolder('dashboard-queries-'), 'dashboard.rules.yml');
    const queries = dashboardQueries();
    writeFileSync(
      rules,
      [
        'groups:',
        '  - name: dashboard',
        '    rules:',
        ...queries.flatMap((query, i) => [
          `      - record: dashboard:query_${i}`,
          `        expr: ${JSON.stringify(query.expr)}`,
        ]),
        '',
      ].join('\n'),
    );
    expect(promtool(['check', 'rules', rules])).toEqual({
      status: 0,
      output: expect.stringContaining(`SUCCESS: ${queries.length} rules found`) as string,
    });
    expect(queries.length).toBeGreaterThanOrEqual(10);
  });
});
