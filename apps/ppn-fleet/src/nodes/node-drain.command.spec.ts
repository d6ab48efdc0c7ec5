import { CliIo } from '../terminal/cli-io';
import { ExitCode } from '../api/exit-codes';
import { runCli } from '../run-cli';

class Captured {
  text = '';
  readonly isTTY = false;
  write(text: string): boolean {
    this.text += text;
    return true;
  }
}

/** The CLI's process, faked: a controller answering every request with `answer`. */
class FakeIo extends CliIo {
  readonly env = {};
  readonly stdout = new Captured();
  readonly stderr = new Captured();
  readonly sent: string[] = [];
  readonly fetch: typeof fetch;

  constructor(answer: (request: Request) => Response) {
    super();
    this.fetch = ((request: Request) => {
      this.sent.push(`${request.method} ${new URL(request.url).pathname}`);
      return Promise.resolve(answer(request));
    }) as typeof fetch;
  }

  sleep(): Promise<void> {
    return Promise.resolve();
  }

  now(): number {
    return 0;
  }
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

const DRAINED = {
  node_id: 'node-a',
  drained: true,
  since: '2026-08-06T12:00:00.000Z',
  vms: [
    {
      vm_id: 'vm-1',
      outcome: 'moved',
      to_node_id: 'node-b',
      mode: 'live',
      message: null,
      took_ms: 12_300,
    },
    {
      vm_id: 'vm-2',
      outcome: 'left',
      to_node_id: null,
      mode: null,
      message: 'vm vm-2 cannot move: no node has 2560 MB free',
      took_ms: 4,
    },
  ],
  remaining_vm_ids: ['vm-2'],
};

describe('ppn-fleet node drain, undrain, drain-status (the operations listener)', () => {
  it('drains: each VM with its outcome, the one left named with why, and what the node still runs', async () => {
    const io = new FakeIo(() => json(DRAINED));
    expect(await runCli(['node', 'drain', 'node-a'], io)).toBe(ExitCode.Ok);
    expect(io.sent).toEqual(['POST /v1/nodes/node-a/drain']);
    expect(io.stdout.text).toBe(
      [
        'node node-a drained since 2026-08-06T12:00:00.000Z: placement passes it over (ppn-fleet node undrain node-a ends it)',
        '  vm-1: moved live to node node-b in 12.3 s',
        '  vm-2: left on it: vm vm-2 cannot move: no node has 2560 MB free',
        'node node-a still lists vm-2',
        '',
      ].join('\n'),
    );
  });

  it('undrains and shows the drain; an unknown node is refused, exit 1', async () => {
    const io = new FakeIo(() =>
      json({ ...DRAINED, drained: false, since: null, vms: [], remaining_vm_ids: [] }),
    );
    expect(await runCli(['node', 'undrain', 'node-a'], io)).toBe(ExitCode.Ok);
    expect(io.sent).toEqual(['POST /v1/nodes/node-a/undrain']);
    expect(io.stdout.text).toBe(
      'node node-a is not drained: placement may choose it\nnode node-a runs no VM\n',
    );
    const status = new FakeIo(() => json(DRAINED));
    expect(await runCli(['node', 'drain-status', 'node-a'], status)).toBe(ExitCode.Ok);
    expect(status.sent).toEqual(['GET /v1/nodes/node-a/drain']);
    expect(status.stdout.text).toContain('vm-1: moved live to node node-b');
    const unknown = new FakeIo(() =>
      json({ statusCode: 404, error: 'Not Found', message: 'node node-z is not enrolled' }, 404),
    );
    expect(await runCli(['node', 'drain', 'node-z'], unknown)).toBe(ExitCode.Refused);
    expect(unknown.stderr.text).toContain('node node-z is not enrolled');
  });

  it('refuses a node id that is not one before asking anything', async () => {
    const io = new FakeIo(() => json(DRAINED));
    expect(await runCli(['node', 'drain', '../etc'], io)).not.toBe(ExitCode.Ok);
    expect(io.sent).toEqual([]);
  });
});
