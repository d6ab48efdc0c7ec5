/**
 * `npm run bench -- ingestion-cpu`: the CPU one heartbeat costs the controller, in process, side
 * by side with the framework's floor (the smallest Nest + Express app taking NodeHeartbeat through
 * the project's configureDaemonHttp and validation pipe into a Map, as
 * ../shared/bench/side-by-side.sh runs it). Each app is driven through its Express handler with
 * in-memory sockets (no TCP, no load generator sharing the CPU), each in a process of its own;
 * process.cpuUsage() over REQUESTS heartbeats from NODES node ids, after a warm-up.
 * The two processes measure at the same time, one per core. A shared host's speed can swing by
 * a third within seconds: apps measured one after the other mostly show the swing, apps
 * measured at once are slowed alike and their ratio holds. (The event loop's delay, also shown,
 * is only meaningful on a quiet machine.)
 * Alone: ts-node -T -r tsconfig-paths/register test/bench/ingestion-cpu.ts [--nodes N]; one app
 * (measures once its stdin ends): ... ingestion-cpu.ts product|floor [--nodes N] </dev/null
 */
import 'reflect-metadata';
import { Duplex } from 'node:stream';
import { IncomingMessage, Server, ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Body, Controller, HttpCode, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { configureDaemonHttp, createValidationPipe } from '@app/daemon';
import { NodeHeartbeat } from '@app/fleet-domain';
import { heartbeatStream } from './heartbeat-bodies';
import { spawnBenchScript } from './bench-script';

/** `--nodes N`: node ids the heartbeats cycle through (1,000 by default). */
const NODES = Number(process.argv[process.argv.indexOf('--nodes') + 1]) || 1_000;
/** Heartbeats before measuring: every node id enrolled (a first heartbeat costs more), then more. */
const WARM_UP = NODES + 5_000;
const REQUESTS = 20_000;
const ROUNDS = 5;
/** What a child writes once warmed up. */
const READY_LINE = 'warmed up\n';

export interface IngestionCpuResult {
  app: 'product' | 'floor';
  /** CPU (user + system) per heartbeat, µs. */
  cpuUsPerHeartbeat: number;
  /** The event loop's delay while heartbeats were taken (the app's jobs' stalls), p99 and max, ms. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

/** A socket that takes whatever is written and drops it; the peer's address is loopback. */
class SinkSocket extends Duplex {
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 40000;
  readonly encrypted = false;
  /** What was written, when kept (the first answer, to check it). */
  written?: string;
  override _read(): void {}
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    if (this.written !== undefined) this.written += chunk.toString();
    done();
  }
  setTimeout(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * One POST through `handler`, kept alive as autocannon's; resolves with the status once the
 * answer is finished (and with the bytes written, with `keep`).
 */
function post(
  handler: Handler,
  path: string,
  body: string,
  keep = false,
): Promise<{ status: number; written?: string }> {
  const socket = new SinkSocket();
  if (keep) socket.written = '';
  const req = new IncomingMessage(socket as never);
  const bytes = Buffer.from(body);
  req.method = 'POST';
  req.url = path;
  req.httpVersion = '1.1';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.headers = {
    host: '127.0.0.1:9203',
    'content-type': 'application/json',
    'content-length': String(bytes.length),
    connection: 'keep-alive',
  };
  req.push(bytes);
  req.push(null);
  // What node:http's parser sets: without it the request reads as aborted once consumed, and
  // the answer is dropped unwritten.
  req.complete = true;
  const res = new ServerResponse(req);
  res.shouldKeepAlive = true;
  res.assignSocket(socket as never);
  return new Promise((resolve) => {
    res.on('finish', () => {
      res.detachSocket(socket as never);
      resolve({ status: res.statusCode, written: socket.written });
    });
    handler(req, res);
  });
}

/** `answer`: what the first answer's bytes hold (the floor answers no body). */
async function drive(
  handler: Handler,
  count: number,
  next: () => string,
  answer: string,
): Promise<void> {
  const first = await post(handler, '/v1/nodes/heartbeat', next(), true);
  if (first.status !== 200 || !first.written?.includes(answer)) {
    throw new Error(`heartbeat answered ${first.written}`);
  }
  for (let i = 1; i < count; i++) {
    // Each request arrives from I/O, as on a socket: the app's timers (its jobs) get their turn.
    await new Promise((resolve) => setImmediate(resolve));
    const { status } = await post(handler, '/v1/nodes/heartbeat', next());
    if (status !== 200) throw new Error(`heartbeat answered ${status}`);
  }
}

const floorNodes = new Map<string, unknown>();

@Controller('v1/nodes')
class FloorController {
  @Post('heartbeat')
  @HttpCode(200)
  heartbeat(@Body() hb: NodeHeartbeat): void {
    floorNodes.set(hb.node_id, { ...hb, received_at_ms: Date.now() });
  }
}

@Module({ controllers: [FloorController] })
export class FloorModule {}

async function createApp(which: 'product' | 'floor'): Promise<NestExpressApplication> {
  if (which === 'floor') {
    const app = await NestFactory.create<NestExpressApplication>(FloorModule, {
      logger: false,
      bodyParser: false,
    });
    configureDaemonHttp(app, () => undefined);
    app.useGlobalPipes(createValidationPipe());
    return app;
  }
  // The product as main.ts builds it (memory store, heartbeats open), its log off.
  const { createFleetApp } = await import('../../apps/fleet/src/bootstrap');
  const { loadFleetConfig } = await import('../../apps/fleet/src/config/fleet-config.load');
  return createFleetApp(loadFleetConfig({}), { logger: false });
}

/**
 * One app in this process: warm-up, then the CPU of REQUESTS heartbeats once `go` resolves (the
 * other app warmed up too).
 */
export async function measureOne(
  which: 'product' | 'floor',
  go: () => Promise<void> = () => Promise.resolve(),
): Promise<IngestionCpuResult> {
  const app = await createApp(which);
  await app.init();
  // Through the HTTP server's 'request' event, as node:http delivers it: every listener the app
  // added to its server (the product's refused-heartbeats counter) is paid for too.
  const server: Server = app.getHttpServer();
  const handler: Handler = (req, res) => server.emit('request', req, res);
  const next = heartbeatStream(NODES);
  const answer = which === 'product' ? '\r\n\r\n{"accepted":true}' : '200 OK';
  await drive(handler, WARM_UP, next, answer);
  await go();
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const before = process.cpuUsage();
  await drive(handler, REQUESTS, next, answer);
  const used = process.cpuUsage(before);
  delay.disable();
  await app.close();
  return {
    app: which,
    cpuUsPerHeartbeat: (used.user + used.system) / REQUESTS,
    loopDelayP99Ms: delay.percentile(99) / 1e6,
    loopDelayMaxMs: delay.max / 1e6,
  };
}

/** A child measuring one app: `ready` once warmed up, `measure()` starts it and gives its figures. */
interface Child {
  ready: Promise<void>;
  measure(): Promise<IngestionCpuResult>;
  /** Ends it (the other app failed). */
  stop(): void;
}

function startChild(which: 'product' | 'floor'): Child {
  const child = spawnBenchScript('ingestion-cpu.ts', [which, '--nodes', String(NODES)]);
  let output = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  // 'close': its stdout read to the end.
  const done = new Promise<IngestionCpuResult>((resolve, reject) => {
    child.on('close', (code) => {
      const figures = output.slice(output.indexOf(READY_LINE) + READY_LINE.length);
      try {
        if (code !== 0) throw new Error(`exited ${code}`);
        resolve(JSON.parse(figures) as IngestionCpuResult);
      } catch (error) {
        reject(new Error(`ingestion-cpu ${which}: ${String(error)}`));
      }
    });
  });
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes(READY_LINE)) markReady();
  });
  return {
    ready: Promise.race([ready, done.then(() => undefined)]),
    measure: () => {
      child.stdin.end('go\n');
      return done;
    },
    stop: () => void child.kill(),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * ROUNDS rounds, each app in a process of its own, both measuring at once; the median of the
 * rounds' floor/product ratios, and the median CPU of each.
 */
export async function measureIngestionCpu(): Promise<{
  productUs: number;
  floorUs: number;
  /** The median of the rounds' floor/product CPU ratios (1 or more: the product as cheap). */
  ratio: number;
  productLoopDelayP99Ms: number;
}> {
  const product: IngestionCpuResult[] = [];
  const floor: IngestionCpuResult[] = [];
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const children = [startChild('product'), startChild('floor')];
    const [ours, theirs] = await Promise.all(children.map((child) => child.ready))
      .then(() => Promise.all(children.map((child) => child.measure())))
      .catch((error: unknown) => {
        for (const child of children) child.stop();
        throw error;
      });
    product.push(ours);
    floor.push(theirs);
    ratios.push(theirs.cpuUsPerHeartbeat / ours.cpuUsPerHeartbeat);
    console.log(
      `  round ${round}: product ${ours.cpuUsPerHeartbeat.toFixed(0)} µs (loop delay p99 ${ours.loopDelayP99Ms.toFixed(1)} ms), floor ${theirs.cpuUsPerHeartbeat.toFixed(0)} µs (${theirs.loopDelayP99Ms.toFixed(1)} ms) per heartbeat, floor/product ${ratios[ratios.length - 1].toFixed(2)}`,
    );
  }
  return {
    productUs: median(product.map((result) => result.cpuUsPerHeartbeat)),
    floorUs: median(floor.map((result) => result.cpuUsPerHeartbeat)),
    ratio: median(ratios),
    productLoopDelayP99Ms: median(product.map((result) => result.loopDelayP99Ms)),
  };
}

if (require.main === module) {
  const which = process.argv[2];
  if (which === 'product' || which === 'floor') {
    // Run by measureIngestionCpu: says it is warmed up, measures once told to (stdin's end).
    const go = (): Promise<void> => {
      process.stdout.write(READY_LINE);
      return new Promise((resolve) => process.stdin.once('end', resolve).resume());
    };
    void measureOne(which, go).then((result) => process.stdout.write(JSON.stringify(result)));
  } else {
    void measureIngestionCpu().then(({ productUs, floorUs, ratio, productLoopDelayP99Ms }) =>
      console.log(
        `CPU per heartbeat (${NODES} node ids, ${REQUESTS} heartbeats, both apps at once, median of ${ROUNDS} rounds): product ${productUs.toFixed(0)} µs, floor ${floorUs.toFixed(0)} µs, floor/product ${ratio.toFixed(2)}; product's event loop delay p99 ${productLoopDelayP99Ms.toFixed(1)} ms`,
      ),
    );
  }
}
