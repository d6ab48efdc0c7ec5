import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DASHBOARD_PATH = join(__dirname, '../../deploy/grafana/ppn-fleet.json');

export interface DashboardTarget {
  refId: string;
  expr: string;
  datasource?: { type?: string; uid?: string };
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets: DashboardTarget[];
}

export interface Dashboard {
  /** What Grafana's import asks for: here the Prometheus data source, as ${DS_PROMETHEUS}. */
  __inputs: Array<{ name: string; type: string; pluginId: string; label?: string }>;
  __requires: Array<{ type: string; id: string }>;
  uid: string;
  title: string;
  templating: {
    list: Array<{ name: string; type: string; query?: string; current?: { value?: string } }>;
  };
  panels: DashboardPanel[];
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as Dashboard;
}

/**
 * Each panel's queries as Prometheus gets them from Grafana: the interval variables replaced,
 * `$__rate_interval` by `rateInterval` (Grafana makes it at least four scrape intervals).
 */
export function dashboardQueries(
  rateInterval = '1m',
): Array<{ panel: string; refId: string; expr: string }> {
  return readDashboard().panels.flatMap((panel) =>
    panel.targets.map((target) => ({
      panel: panel.title,
      refId: target.refId,
      expr: target.expr.replace(/\$__rate_interval|\$__interval|\$__range/g, rateInterval),
    })),
  );
}
