import { connect } from 'node:net';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat } from '../support/heartbeats';

/**
 * A heartbeat's answer, byte for byte as an agent's socket reads it (only Date masked): the
 * controller writes its constant `{"accepted":true}` pre-serialized (libs/daemon
 * constant-answers.ts), which must send exactly what Express's res.json sent before.
 */
function exchange(url: string, body: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        'POST /v1/nodes/heartbeat HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          'Content-Type: application/json\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      ),
    );
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () =>
      resolve(
        Buffer.concat(chunks)
          .toString('latin1')
          .replace(/\r\nDate: [^\r]*/, '\r\nDate: -'),
      ),
    );
  });
}

describe('fleet controller: a heartbeat answer on the wire', () => {
  let fleet: RunningFleet;

  beforeAll(async () => {
    fleet = await startFleet();
  });

  afterAll(() => fleet.close());

  it('is the same bytes for every accepted heartbeat, headers and all', async () => {
    for (const node of ['n1', 'n2', 'n1']) {
      const sent = heartbeat({ node_id: node, timestamp_utc: new Date().toISOString() });
      expect(await exchange(fleet.url, JSON.stringify(sent))).toBe(
        'HTTP/1.1 200 OK\r\n' +
          'Content-Type: application/json; charset=utf-8\r\n' +
          'Content-Length: 17\r\n' +
          'Date: -\r\n' +
          'Connection: close\r\n' +
          '\r\n' +
          '{"accepted":true}',
      );
    }
  });

  it('answers a refused heartbeat as before (400 JSON naming the field)', async () => {
    const sent = { ...heartbeat({ node_id: 'n3' }), ram_total_mb: 'x' };
    const message =
      '{"statusCode":400,"error":"Bad Request","message":"ram_total_mb must be an integer number"}';
    expect(await exchange(fleet.url, JSON.stringify(sent))).toBe(
      'HTTP/1.1 400 Bad Request\r\n' +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${message.length}\r\n` +
        'Date: -\r\n' +
        'Connection: close\r\n' +
        '\r\n' +
        message,
    );
  });
});
