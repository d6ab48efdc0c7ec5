import { ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from './daemons';
import { freePort } from './redis-server';
import { scratchFolder } from './scratch-folders';

/** The alert rules as shipped, loaded unchanged. */
export const SHIPPED_RULES = join(__dirname, '../../deploy/prometheus/ppn-fleet.rules.yml');

/** One alert as Prometheus's /api/v1/alerts lists it. */
export interface PrometheusAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

/**
 * A real Prometheus (Debian's `prometheus`, as an operator runs it) of the spec's own: its
 * TSDB in a scratch folder, its web on a free loopback port, scraping each job's targets and
 * evaluating the rule files every second (the rules' own `for:` durations unchanged).
 */
export class PrometheusServer {
  private output = '';

  private constructor(
    private readonly process: ChildProcess,
    /** host:port of its web and API. */
    readonly web: string,
  ) {
    const collect = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
    };
    process.stdout!.on('data', collect);
    process.stderr!.on('data', collect);
  }

  /** Started, resolved once every target has been scraped up. */
  static async start(
    jobs: Record<string, string[]>,
    ruleFiles: string[],
  ): Promise<PrometheusServer> {
    const dir = scratchFolder('prometheus-');
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        '  evaluation_interval: 1s',
        'rule_files:',
        ...ruleFiles.map((file) => `  - ${JSON.stringify(file)}`),
        'scrape_configs:',
        ...Object.entries(jobs).flatMap(([job, targets]) => [
          `  - job_name: ${job}`,
          '    static_configs:',
          `      - targets: ${JSON.stringify(targets)}`,
        ]),
        '',
      ].join('\n'),
    );
    const web = `127.0.0.1:${await freePort()}`;
    const child = spawn(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=${web}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const server = new PrometheusServer(child, web);
    const wanted = Object.values(jobs).flat().length;
    await eventually(
      'every target scraped up',
      async () => {
        const { activeTargets } = await server.api<{
          activeTargets: Array<{ health: string }>;
        }>('targets');
        return activeTargets.length === wanted &&
          activeTargets.every(({ health }) => health === 'up')
          ? true
          : undefined;
      },
      30_000,
      250,
    ).catch(async (error: Error) => {
      await server.stop();
      throw new Error(`${error.message}; prometheus output:\n${server.output}`);
    });
    return server;
  }

  /** The data of an API answer (`/api/v1/<path>`); rejects on an error answer. */
  async api<T>(path: string): Promise<T> {
    const response = await fetch(`http://${this.web}/api/v1/${path}`);
    const answer = (await response.json()) as { status: string; error?: string; data: T };
    if (!response.ok || answer.status !== 'success') {
      throw new Error(`prometheus /api/v1/${path}: ${response.status} ${answer.error ?? ''}`);
    }
    return answer.data;
  }

  async alerts(): Promise<PrometheusAlert[]> {
    return (await this.api<{ alerts: PrometheusAlert[] }>('alerts')).alerts;
  }

  /** What it printed last, for a failure's message. */
  get log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill('SIGKILL');
    await exited;
  }
}
