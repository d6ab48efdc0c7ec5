import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  VM_HOST_MAIN,
  eventually,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { freePort } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The agent runs on every node, so what it loads is what every node pays: the built agent, as
 * installed (its command's Node options included), after enrolling with the real controller.
 * Run under the shared lock: it binds 9203.
 */
jest.setTimeout(40_000);

/** Loaded with `node -r`: on SIGUSR2, writes what the process has loaded to $PROBE_FILE. */
const PROBE = `
process.on('SIGUSR2', () => {
  require('node:fs').writeFileSync(process.env.PROBE_FILE, JSON.stringify({
    files: Object.keys(require.cache),
    builtins: process.moduleLoadList,
  }));
});
`;

interface Loaded {
  files: string[];
  builtins: string[];
}

const MAX_RSS_MB = 80;

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024;
}

describe('the running agent', () => {
  let dir: string;
  let probe: string;

  beforeAll(async () => {
    dir = scratchFolder('agent-footprint-');
    probe = join(dir, 'probe.js');
    writeFileSync(probe, PROBE);
    await startFleetDaemon().waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  async function startAgent(nodeId: string, env: NodeJS.ProcessEnv = {}): Promise<Daemon> {
    const agent = new Daemon(
      VM_HOST_MAIN,
      {
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: nodeId,
        VM_WG_IP: '127.0.0.1',
        VM_SPAWN_PORT: String(await freePort()),
        VM_HEARTBEAT_INTERVAL_S: '10',
        VM_DISK_DIR: join(dir, nodeId),
        PROBE_FILE: join(dir, `${nodeId}.json`),
        ...env,
      },
      [],
      ['-r', probe],
    );
    await agent.waitForOutput(/enrolled/);
    return agent;
  }

  async function loaded(agent: Daemon, nodeId: string): Promise<Loaded> {
    const file = join(dir, `${nodeId}.json`);
    writeFileSync(file, '');
    agent.process.kill('SIGUSR2');
    return eventually(
      'the probe',
      () => {
        const text = readFileSync(file, 'utf8');
        return Promise.resolve(text ? (JSON.parse(text) as Loaded) : undefined);
      },
      5_000,
    );
  }

  it(`loads neither @nestjs/swagger, fetch nor prom-client, and stays under ${MAX_RSS_MB} MB`, async () => {
    const agent = await startAgent('lean-01');
    const { files, builtins } = await loaded(agent, 'lean-01');
    expect(files.filter((file) => file.includes('/node_modules/@nestjs/swagger/'))).toEqual([]);
    expect(files.filter((file) => file.includes('/node_modules/prom-client/'))).toEqual([]);
    expect(files.filter((file) => file.includes('/node_modules/openapi-fetch/'))).toEqual([]);
    expect(builtins.filter((name) => name.includes('undici'))).toEqual([]);

    // A few heartbeats' worth of time in the steady state, as the bench measures it.
    let maxRssMb = 0;
    for (let sample = 0; sample < 6; sample++) {
      maxRssMb = Math.max(maxRssMb, rssMb(agent.process.pid!));
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(maxRssMb).toBeLessThanOrEqual(MAX_RSS_MB);
    await agent.stop();
  });

  it('loads prom-client only when VM_METRICS_ADDR asks for metrics', async () => {
    const agent = await startAgent('metered-01', {
      VM_METRICS_ADDR: `127.0.0.1:${await freePort()}`,
    });
    const { files } = await loaded(agent, 'metered-01');
    expect(files.some((file) => file.includes('/node_modules/prom-client/'))).toBe(true);
    await agent.stop();
  });
});
