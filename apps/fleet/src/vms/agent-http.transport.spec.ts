import { createServer, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import {
  AGENT_CONNECT_TIMEOUT_CODE,
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

  it('names a connect timeout with its own code, the time it waited in the message', () => {
    const error = new AgentConnectTimeoutError(2_500.4);
    expect(error.code).toBe(AGENT_CONNECT_TIMEOUT_CODE);
    expect(error.message).toBe('no connection within 2500 ms');
  });
});
