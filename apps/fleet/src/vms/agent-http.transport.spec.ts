import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { unansweredPort } from '../../../../test/support/unanswered-port';
import {
  AGENT_CONNECT_TIMEOUT_CODE,
  AGENT_LARGE_REPLY_MAX_BYTES,
  AGENT_REPLY_MAX_BYTES,
  AgentConnectTimeoutError,
  UnusableAgentReplyError,
  agentFetch,
} from './agent-http.transport';

describe('agentFetch', () => {
  let server: Server;
  let url: string;
  let answer: (res: ServerResponse, body: string) => void;
  const seen: Array<{ method?: string; headers: Record<string, unknown>; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        seen.push({ method: req.method, headers: req.headers, body });
        answer(res, body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  beforeEach(() => (seen.length = 0));

  it('sends the request and answers the reply, one connection per call', async () => {
    answer = (res, body) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ echoed: body }));
    };
    const response = await agentFetch(
      new Request(`${url}/v1/spawn?x=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'k' },
        body: '{"a":1}',
      }),
      1_000,
    );
    expect(response.status).toBe(201);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ echoed: '{"a":1}' });
    expect(seen[0]).toMatchObject({
      method: 'POST',
      headers: { 'idempotency-key': 'k', connection: 'close', 'content-length': '7' },
    });
    expect(seen[0].headers['accept-encoding']).toBeUndefined();
  });

  it('answers a 204 without a body and follows no redirect', async () => {
    answer = (res) => {
      res.writeHead(204);
      res.end();
    };
    expect(
      (await agentFetch(new Request(`${url}/v1/vms/x`, { method: 'DELETE' }), 1_000)).status,
    ).toBe(204);
    answer = (res) => {
      res.writeHead(307, { location: 'http://169.254.169.254/' });
      res.end();
    };
    const redirected = await agentFetch(new Request(`${url}/v1/spawn`, { method: 'POST' }), 1_000);
    expect(redirected.status).toBe(307);
    expect(seen).toHaveLength(2);
  });

  it(`refuses a reply of more than ${AGENT_REPLY_MAX_BYTES / 1024} KiB`, async () => {
    answer = (res) => {
      res.writeHead(200);
      res.end('x'.repeat(AGENT_REPLY_MAX_BYTES + 1));
    };
    await expect(agentFetch(new Request(`${url}/v1/vms`), 1_000)).rejects.toThrow(
      UnusableAgentReplyError,
    );
  });

  it('reads a larger reply when the call allows it (a console, every life cycle), and no more', async () => {
    const console = 'x'.repeat(AGENT_REPLY_MAX_BYTES * 4);
    answer = (res) => {
      res.writeHead(200);
      res.end(console);
    };
    const reply = await agentFetch(
      new Request(`${url}/v1/vms/vm-1/console`),
      1_000,
      AGENT_LARGE_REPLY_MAX_BYTES,
    );
    expect(await reply.text()).toBe(console);
    answer = (res) => {
      res.writeHead(200);
      res.end('x'.repeat(AGENT_LARGE_REPLY_MAX_BYTES + 1));
    };
    await expect(
      agentFetch(new Request(`${url}/v1/vms/vm-1/console`), 1_000, AGENT_LARGE_REPLY_MAX_BYTES),
    ).rejects.toThrow(UnusableAgentReplyError);
  });

  it("aborts with the signal's reason once connected (the agent may have the request)", async () => {
    answer = () => undefined; // never answers
    const error = await agentFetch(
      new Request(`${url}/v1/spawn`, { method: 'POST', signal: AbortSignal.timeout(100) }),
      1_000,
    ).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('TimeoutError');
    server.closeAllConnections();
  });

  it('gives the socket error of a refused connection, with its code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    await expect(
      agentFetch(new Request(`http://127.0.0.1:${port}/v1/spawn`), 1_000),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('counts a signal firing before the connection is made as a connect timeout (nothing reached the agent)', async () => {
    const silent = await unansweredPort();
    try {
      const startedAt = performance.now();
      const error = await agentFetch(
        new Request(`http://127.0.0.1:${silent.port}/v1/spawn`, {
          method: 'POST',
          signal: AbortSignal.timeout(100),
        }),
        5_000,
      ).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(AgentConnectTimeoutError);
      expect((error as AgentConnectTimeoutError).code).toBe(AGENT_CONNECT_TIMEOUT_CODE);
      expect(performance.now() - startedAt).toBeLessThan(2_000);
    } finally {
      silent.close();
    }
  });

  it('gives up on the connect timeout of its own, before the signal', async () => {
    const silent = await unansweredPort();
    try {
      await expect(
        agentFetch(
          new Request(`http://127.0.0.1:${silent.port}/v1/spawn`, {
            signal: AbortSignal.timeout(5_000),
          }),
          100,
        ),
      ).rejects.toThrow('no connection within 100 ms');
    } finally {
      silent.close();
    }
  });

  it('fails a call whose connection is closed without a reply', async () => {
    answer = (res) => res.socket?.end();
    const error = await agentFetch(new Request(`${url}/v1/spawn`, { method: 'POST' }), 1_000).catch(
      (thrown: unknown) => thrown,
    );
    // Node names a bare close "socket hang up" (ECONNRESET); either way, no reply is made up.
    expect(error).not.toBeInstanceOf(AgentConnectTimeoutError);
    expect(error).toMatchObject({
      message: expect.stringMatching(/socket hang up|without a reply/),
    });
  });

  it("ends a reply trickled in slowly with the signal's reason", async () => {
    let trickle: NodeJS.Timeout | undefined;
    answer = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      trickle = setInterval(() => res.write(' '), 20);
    };
    try {
      const startedAt = performance.now();
      const error = await agentFetch(
        new Request(`${url}/v1/vms`, { signal: AbortSignal.timeout(200) }),
        1_000,
      ).catch((thrown: unknown) => thrown);
      expect((error as DOMException).name).toBe('TimeoutError');
      expect(performance.now() - startedAt).toBeLessThan(1_500);
    } finally {
      clearInterval(trickle);
      server.closeAllConnections();
    }
  });

  it('sends nothing when the signal fired while the request body was being read', async () => {
    const controller = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      start(stream) {
        setTimeout(() => {
          controller.abort(new Error('gave up'));
          stream.enqueue(new TextEncoder().encode('{}'));
          stream.close();
        }, 20);
      },
    });
    await expect(
      agentFetch(
        new Request(`${url}/v1/spawn`, {
          method: 'POST',
          body,
          duplex: 'half',
          signal: controller.signal,
        }),
        1_000,
      ),
    ).rejects.toThrow('gave up');
    expect(seen).toHaveLength(0);
  });

  it('names a connect timeout with its own code, the time it waited in the message', () => {
    const error = new AgentConnectTimeoutError(2_500.4);
    expect(error.code).toBe(AGENT_CONNECT_TIMEOUT_CODE);
    expect(error.message).toBe('no connection within 2500 ms');
  });
});
