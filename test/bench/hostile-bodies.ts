/**
 * Hostile request bodies against the controller, in its own process: the app built by the
 * production bootstrap, listening on a free loopback port, each body sent whole over a raw
 * socket (so the client costs the event loop nothing while the server works). Prints, per body,
 * the answer's status, time and size and the longest event-loop stall while it was handled,
 * as JSON. Each body is sent once to warm up, then three times measured; the worst run counts.
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { MAX_BODY_BYTES, MAX_VMS_PER_HEARTBEAT } from '@app/fleet-domain';
import { createFleetApp } from '../../apps/fleet/src/bootstrap';
import { fleetConfig } from '../support/configs';
import { heartbeat as realisticHeartbeat, vmRecord } from '../support/heartbeats';
import { LoopStallMeter } from './loop-stall';

export interface HostileResult {
  body: string;
  bytes: number;
  status: number;
  answerMs: number;
  answerBytes: number;
  maxStallMs: number;
}

const RUNS = 3;

function heartbeat(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...realisticHeartbeat({ node_id: 'hostile-1' }), ...extra };
}

function vm(index: number, ports: number): object {
  return vmRecord(`vm-${index}`, {
    host_ports: Array.from({ length: ports }, (_, port) => ({
      host_port: 40000 + port,
      guest_port: 22,
      protocol: 'tcp' as const,
    })),
  });
}

/** `{"...": <fill>}` with `unit` repeated to fill the body limit, in field `field`. */
function filling(field: string, open: string, unit: string, close: string, count?: number): string {
  const head = JSON.stringify(heartbeat()).slice(0, -1) + `,${JSON.stringify(field)}:${open}`;
  const room = MAX_BODY_BYTES - head.length - close.length - 2;
  const times = count ?? Math.floor(room / (unit.length + 1));
  return `${head}${Array(times).fill(unit).join(',')}${close}}`;
}

function nested(field: string, open: string, close: string): string {
  const head = JSON.stringify(heartbeat()).slice(0, -1) + `,${JSON.stringify(field)}:`;
  const depth = Math.floor((MAX_BODY_BYTES - head.length - 10) / (open.length + close.length));
  return `${head}${open.repeat(depth)}1${close.repeat(depth)}}`;
}

function distinctNames(count: number): string {
  const names = Array.from({ length: count }, (_, index) => `"x${index}":0`).join(',');
  return JSON.stringify(heartbeat()).slice(0, -1) + `,${names}}`;
}

const bodies: Array<[string, () => string]> = [
  ['a normal heartbeat (2 VMs)', () => JSON.stringify(heartbeat({ vms: [vm(1, 1), vm(2, 1)] }))],
  [
    '100,000 empty VM objects',
    () => JSON.stringify(heartbeat({ vms: Array.from({ length: 100_000 }, () => ({})) })),
  ],
  [
    '20,000 empty VM objects',
    () => JSON.stringify(heartbeat({ vms: Array.from({ length: 20_000 }, () => ({})) })),
  ],
  [
    `${MAX_VMS_PER_HEARTBEAT} valid VMs (accepted)`,
    () =>
      JSON.stringify(
        heartbeat({ vms: Array.from({ length: MAX_VMS_PER_HEARTBEAT }, (_, i) => vm(i, 1)) }),
      ),
  ],
  [
    `${MAX_VMS_PER_HEARTBEAT} valid VMs, 16 host ports each (accepted)`,
    () =>
      JSON.stringify(
        heartbeat({ vms: Array.from({ length: MAX_VMS_PER_HEARTBEAT }, (_, i) => vm(i, 16)) }),
      ),
  ],
  [
    `${MAX_VMS_PER_HEARTBEAT} VMs, every field wrong`,
    () =>
      JSON.stringify(
        heartbeat({
          vms: Array.from({ length: MAX_VMS_PER_HEARTBEAT }, () => ({
            vm_id: '../x',
            vm_type: '',
            state: 'Exploded',
            ram_alloc_mb: -1,
            vcpu_count: 1.5,
            started_at: 'noon',
            tenant_id: 'a b',
            host_ports: [{ host_port: 0, guest_port: 0, protocol: 'sctp' }],
          })),
        }),
      ),
  ],
  ['[[[…]]] 1 MiB deep, unknown field', () => nested('labels', '[', ']')],
  ['{"a":{"a":…}} 1 MiB deep, in hostname', () => nested('hostname', '{"a":', '}')],
  ['[[[…]]] 1 MiB deep, in vms', () => nested('vms', '[', ']')],
  ['350,000 empty arrays, unknown field', () => filling('labels', '[', '[]', ']')],
  [
    '32,000 empty objects, unknown field (accepted)',
    () => filling('labels', '[', '{}', ']', 32_000),
  ],
  ['500,000 numbers in ram_total_mb', () => filling('ram_total_mb', '[', '0', ']')],
  ['130,000 numbers in ram_total_mb', () => filling('ram_total_mb', '[', '0', ']', 130_000)],
  ['350,000 short strings, unknown field', () => filling('labels', '[', '"a"', ']')],
  [
    '130,000 short strings, unknown field (accepted)',
    () => filling('labels', '[', '"a"', ']', 130_000),
  ],
  ['60,000 distinct unknown field names', () => distinctNames(60_000)],
  ['1,000 distinct unknown field names (accepted)', () => distinctNames(1_000)],
  [
    '1 MiB hostname',
    () => JSON.stringify(heartbeat({ hostname: 'x'.repeat(MAX_BODY_BYTES - 400) })),
  ],
  ['1 MiB of malformed JSON', () => `{"hostname":"${'x'.repeat(MAX_BODY_BYTES - 100)}`],
];

/** Sends the whole request at once and resolves with the status and size of the answer. */
function send(port: number, body: Buffer): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const answer = Buffer.concat(chunks);
      const headerEnd = answer.indexOf('\r\n\r\n');
      resolve({
        status: Number(answer.subarray(9, 12).toString()),
        bytes: answer.length - headerEnd - 4,
      });
    });
    socket.write(
      Buffer.concat([
        Buffer.from(
          `POST /v1/nodes/heartbeat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
        ),
        body,
      ]),
    );
  });
}

async function main(): Promise<void> {
  Logger.overrideLogger(false);
  const app = await createFleetApp(fleetConfig(), { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const built = bodies.map(([label, build]) => [label, Buffer.from(build())] as const);
  // Once each first, unmeasured: what counts is a running controller, not its first minute.
  for (const [, body] of built) await send(port, body);
  const stalls = new LoopStallMeter();
  const results: HostileResult[] = [];
  for (const [label, body] of built) {
    const result: HostileResult = {
      body: label,
      bytes: body.length,
      status: 0,
      answerMs: 0,
      answerBytes: 0,
      maxStallMs: 0,
    };
    for (let run = 0; run < RUNS; run++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      stalls.reset();
      const startedAt = performance.now();
      const answer = await send(port, body);
      const answerMs = performance.now() - startedAt;
      await new Promise((resolve) => setTimeout(resolve, 20));
      result.status = answer.status;
      result.answerBytes = answer.bytes;
      result.answerMs = Math.max(result.answerMs, answerMs);
      result.maxStallMs = Math.max(result.maxStallMs, stalls.maxMs());
    }
    results.push(result);
  }
  stalls.stop();
  await app.close();
  process.stdout.write(JSON.stringify(results));
}

void main();
