/**
 * Console tabs on a fleet of simulated nodes, run as its own process beside the controller it
 * measures. Each simulated node is an HTTP server answering GET /v1/vm-life-cycles (its one VM
 * running) and heartbeats every 10 s as an agent does, its beats spread over the interval; the
 * tabs poll the overview's live part every 2 s, as the page does. Reads a ConsoleTabsSpec as JSON
 * from argv[2] and prints a ConsoleTabsResult as JSON: the heartbeats' latencies while the tabs
 * poll, the agent calls the controller made, the polls' latencies, and how many nodes are live
 * at the end.
 */
import { spawn } from 'node:child_process';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { heartbeat, vmRecord } from '../support/heartbeats';

export interface ConsoleTabsSpec {
  fleetUrl: string;
  opsUrl: string;
  nodes: number;
  tabs: number;
  /** Polling and beating before the measure, then measured. */
  warmUpS: number;
  durationS: number;
}

interface PollResult {
  polls: number;
  pollP99Ms: number;
  pollsFailed: number;
}

export interface ConsoleTabsResult extends PollResult {
  heartbeats: number;
  heartbeatP50Ms: number;
  heartbeatP99Ms: number;
  heartbeatMaxMs: number;
  heartbeatsRefused: number;
  agentCallsPerSecond: number;
  mostConcurrentAgentCalls: number;
  liveNodesAtEnd: number;
}

const BEAT_INTERVAL_MS = 10_000;
const POLL_INTERVAL_MS = 2_000;

const nodeId = (index: number): string => `tabs-node-${String(index).padStart(5, '0')}`;
const vmId = (index: number): string => `vm-tabs-${String(index).padStart(8, '0')}`;

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]) as ConsoleTabsSpec;
  let measuring = false;
  let calls = 0;
  let inFlight = 0;
  let mostInFlight = 0;
  const servers: Server[] = [];
  for (let index = 0; index < spec.nodes; index++) {
    const body = JSON.stringify([
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
    const server = createServer((req, res) => {
      if (measuring) calls++;
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    // The controller opens one connection per call: those open at once are its calls at once.
    server.on('connection', (socket) => {
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      socket.on('close', () => inFlight--);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }

  const beat = async (index: number): Promise<{ ms: number; status: number }> => {
    const t0 = performance.now();
    const answer = await fetch(`${spec.fleetUrl}/v1/nodes/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        heartbeat({
          node_id: nodeId(index),
          spawn_port: (servers[index].address() as AddressInfo).port,
          vms: [vmRecord(vmId(index))],
          timestamp_utc: new Date().toISOString().replace('Z', '000000Z'),
        }),
      ),
    }).catch(() => undefined);
    await answer?.arrayBuffer();
    return { ms: performance.now() - t0, status: answer?.status ?? 0 };
  };
  for (let first = 0; first < spec.nodes; first += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, spec.nodes - first) }, (_, n) => beat(first + n)),
    );
  }

  let running = true;
  const beatMs: number[] = [];
  let refused = 0;
  // Each node every 10 s, the nodes' beats spread evenly over those 10 s.
  const beating = (async () => {
    const started = performance.now();
    const pending: Array<Promise<void>> = [];
    for (let n = 0; running; n++) {
      const dueMs = (n * BEAT_INTERVAL_MS) / spec.nodes;
      const waitMs = started + dueMs - performance.now();
      if (waitMs > 0) await sleep(waitMs);
      pending.push(
        beat(n % spec.nodes).then(({ ms, status }) => {
          if (!measuring) return;
          beatMs.push(ms);
          if (status !== 200) refused++;
        }),
      );
    }
    await Promise.all(pending);
  })();

  // The tabs in a process of their own: reading 3 MB every 2 s each would otherwise delay this
  // process's own event loop, and with it the heartbeats' measured latency.
  const tabs = pollInChild(spec);

  await sleep(spec.warmUpS * 1000);
  measuring = true;
  mostInFlight = 0;
  await sleep(spec.durationS * 1000);
  measuring = false;
  const nodes = (await (await fetch(`${spec.fleetUrl}/v1/nodes`)).json()) as unknown[];
  running = false;
  await beating;
  const polls = await tabs;
  for (const server of servers) server.close();

  const result: ConsoleTabsResult = {
    heartbeats: beatMs.length,
    heartbeatP50Ms: percentile(beatMs, 50),
    heartbeatP99Ms: percentile(beatMs, 99),
    heartbeatMaxMs: Math.round(Math.max(0, ...beatMs)),
    heartbeatsRefused: refused,
    agentCallsPerSecond: calls / spec.durationS,
    mostConcurrentAgentCalls: mostInFlight,
    ...polls,
    liveNodesAtEnd: nodes.length,
  };
  console.log(JSON.stringify(result));
}

/** This script again, as the tabs (argv[3] `tabs`): their polls' figures. */
function pollInChild(spec: ConsoleTabsSpec): Promise<PollResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, __filename, JSON.stringify(spec), 'tabs'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(output) as PollResult)
        : reject(new Error(`tabs exited ${code}`)),
    );
  });
}

/** The tabs: each opens the page, then polls the overview's live part every 2 s, staggered. */
async function poll(spec: ConsoleTabsSpec): Promise<void> {
  let running = true;
  let measuring = false;
  const pollMs: number[] = [];
  let pollsFailed = 0;
  const tabs = Array.from({ length: spec.tabs }, async (_, tab) => {
    const page = await fetch(`${spec.opsUrl}/`);
    await page.arrayBuffer();
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
    await sleep((tab * POLL_INTERVAL_MS) / spec.tabs);
    while (running) {
      const t0 = performance.now();
      const answer = await fetch(`${spec.opsUrl}/console/fragments/overview`, {
        headers: { cookie },
      }).catch(() => undefined);
      await answer?.arrayBuffer();
      if (measuring) {
        pollMs.push(performance.now() - t0);
        if (answer?.status !== 200) pollsFailed++;
      }
      await sleep(Math.max(0, POLL_INTERVAL_MS - (performance.now() - t0)));
    }
  });
  await sleep(spec.warmUpS * 1000);
  measuring = true;
  await sleep(spec.durationS * 1000);
  measuring = false;
  running = false;
  await Promise.all(tabs);
  const result: PollResult = {
    polls: pollMs.length,
    pollP99Ms: percentile(pollMs, 99),
    pollsFailed,
  };
  console.log(JSON.stringify(result));
}

if (require.main === module) {
  (process.argv[3] === 'tabs'
    ? poll(JSON.parse(process.argv[2]) as ConsoleTabsSpec)
    : main()
  ).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
