import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveNodeToken, deriveTenantToken, packageVersion } from '@app/daemon';
import { CONTROL_CHARACTERS } from '@app/fleet-domain';
import { CliIo, PortAnswer } from './terminal/cli-io';
import { ExitCode } from './api/exit-codes';
import { MAX_ANSWER_BYTES } from './api/fleet-api.client';
import { vmLifeCycle } from '../../../test/factories/vm-life-cycle.factory';
import { exitCodeOf, runCli } from './run-cli';
import { PORT_REQUEST } from './vms/vm-reachability';

type Handler = (request: Request) => Response | Promise<Response>;

class CapturedStream {
  text = '';
  constructor(readonly isTTY = false) {}
  write(text: string): boolean {
    this.text += text;
    return true;
  }
}

/** The CLI's process, faked: its environment, its output, the controller it reaches, its clock. */
class FakeIo extends CliIo {
  readonly stdout: CapturedStream;
  readonly stderr = new CapturedStream();
  readonly requests: Request[] = [];
  private clock = 0;
  readonly fetch: typeof fetch;

  constructor(
    readonly env: NodeJS.ProcessEnv,
    handler: Handler,
    tty = false,
  ) {
    super();
    this.stdout = new CapturedStream(tty);
    this.fetch = (async (input: Request) => {
      this.requests.push(input.clone());
      return handler(input);
    }) as typeof fetch;
  }

  /** What the VM's forwarded ports answer, in turn; then an SSH banner. */
  readonly portAnswers: PortAnswer[] = [];
  readonly probes: string[] = [];

  /** What each probe sent the port when it said nothing first (undefined: nothing). */
  readonly probeRequests: Array<string | undefined> = [];

  override probePort(
    host: string,
    port: number,
    watchMs: number,
    request?: string,
  ): Promise<PortAnswer> {
    this.probes.push(`${host}:${port}`);
    this.probeRequests.push(request);
    this.clock += watchMs;
    return Promise.resolve(
      this.portAnswers.shift() ?? { kind: 'open', text: 'SSH-2.0-OpenSSH_9.2p1 Debian\r\n' },
    );
  }

  sleep(ms: number): Promise<void> {
    this.clock += ms;
    return Promise.resolve();
  }

  now(): number {
    return this.clock;
  }

  /** 2026-08-06T12:00:00Z when the run starts, moving with its sleeps. */
  override wallNow(): number {
    return Date.UTC(2026, 7, 6, 12, 0, 0) + this.clock;
  }
}

function json(body: unknown, status = 200): Response {
  return new Response(typeof body === 'string' ? body : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

function refusal(status: number, message: string): Response {
  return json({ statusCode: status, error: 'Refused', message }, status);
}

const NODE = {
  node_id: 'node-a',
  hostname: 'a',
  wg_ip: '10.8.0.2',
  ram_available_mb: 4096,
  vm_count: 0,
  kvm_available: true,
  reserved: false,
  last_heartbeat: '2026-08-06T12:00:00.000Z',
};

function vm(state: string) {
  return {
    vm_id: 'vm-1',
    vm_type: 'web',
    state,
    ram_alloc_mb: 512,
    vcpu_count: 1,
    started_at: null,
    tenant_id: null,
    host_ports: [{ host_port: 22022, guest_port: 22, protocol: 'tcp' }],
    node_id: 'node-a',
  };
}

/** A controller answering the listings of a one-node fleet. */
const fleetOfOne: Handler = (request) => {
  const path = new URL(request.url).pathname;
  if (path === '/v1/fleet')
    return json({ nodes: [NODE], last_updated: '2026-08-06T12:00:03.000Z' });
  if (path === '/v1/nodes') return json([NODE]);
  if (path === '/v1/nodes/node-a') return json(NODE);
  if (path === '/v1/vms') return json([vm('Running')]);
  return refusal(404, `no route ${path}`);
};

/** A controller: GET /v1/fleet answered as the controller does, every other request by `handler`. */
function controllerAnd(handler: Handler): Handler {
  return (request) =>
    new URL(request.url).pathname === '/v1/fleet' ? fleetOfOne(request) : handler(request);
}

function connectionRefused(): never {
  throw new TypeError('fetch failed', {
    cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
  });
}

async function run(args: string[], io: FakeIo): Promise<ExitCode> {
  return runCli(args, io);
}

describe('ppn-fleet arguments', () => {
  it('--version prints the package version; --help on the program and on each command, exit 0', async () => {
    const io = new FakeIo({}, fleetOfOne);
    expect(await run(['--version'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe(`${packageVersion()}\n`);

    for (const command of [
      [],
      ['status'],
      ['nodes'],
      ['node'],
      ['node', 'declare-dead'],
      ['node', 'drain'],
      ['node', 'undrain'],
      ['node', 'drain-status'],
      ['vms'],
      ['vm'],
      ['vm', 'create'],
      ['vm', 'delete'],
      ['vm', 'stop'],
      ['vm', 'start'],
      ['vm', 'restart'],
      ['vm', 'console'],
      ['vm', 'backup'],
      ['vm', 'copies'],
      ['vm', 'restore'],
      ['vm', 'move'],
      ['node-token'],
      ['image'],
      ['image', 'build'],
      ['image', 'list'],
    ]) {
      const help = new FakeIo({}, fleetOfOne);
      expect(await run([...command, '--help'], help)).toBe(ExitCode.Ok);
      expect(help.stdout.text).toMatch(new RegExp(`^Usage: ppn-fleet ${command.join(' ')}`));
    }
    const create = new FakeIo({}, fleetOfOne);
    await run(['vm', 'create', '--help'], create);
    for (const required of ['--type <vm_type>', '--ram <mb>', '--vcpus <n>']) {
      expect(create.stdout.text).toMatch(new RegExp(`${required} +required: `));
    }
    for (const option of [
      '--type',
      '--ram',
      '--vcpus',
      '--tenant',
      '--node',
      '--kvm',
      '--key',
      '--wait',
      '--timeout',
      '--json',
      '--endpoint',
    ]) {
      expect(create.stdout.text).toContain(option);
    }
  });

  it.each([
    [[]],
    [['no-such-command']],
    [['nodes', '--no-such-option']],
    [['node']],
    [['node', 'bad/id']],
    [['vm']],
    [['vm', 'create', '--type', 'web', '--ram', '512']],
    [['vm', 'create', '--type', 'web', '--ram', '0', '--vcpus', '1']],
    [['vm', 'create', '--type', 'web_1', '--ram', '512', '--vcpus', '1']],
    [['vm', 'create', '--type', 'web', '--ram', '512', '--vcpus', '1', '--key', 'a b']],
    [['vms', '--tenant', '-x']],
    [['status', '--interval', '0']],
    [['nodes', '--endpoint', 'ftp://controller']],
    [['nodes', '--endpoint', 'http://user:pw@controller']],
    [['vm', 'stop']],
    [['vm', 'stop', 'bad/id']],
    [['vm', 'stop', 'vm-1', '--timeout', '0']],
    [['vm', 'restart', 'vm-1', '--timeout', '601']],
    [['vm', 'start', 'vm-1', '--force']],
    [['vm', 'console', 'vm-1', '--ops-endpoint', 'ftp://controller']],
  ])('%j is a usage error (exit 2) that sends nothing', async (args) => {
    const io = new FakeIo({}, fleetOfOne);
    expect(await run(args, io)).toBe(ExitCode.Usage);
    expect(io.requests).toHaveLength(0);
    expect(io.stdout.text).toBe('');
    expect(io.stderr.text).not.toBe('');
  });

  it.each([
    [
      ['vm', 'create', '--type', 'web', '--ram', '512'],
      "ppn-fleet: required option '--vcpus <n>' not specified\n",
    ],
    [['nodes', '--bogus'], "ppn-fleet: unknown option '--bogus'\n"],
    [['no-such-command'], "ppn-fleet: unknown command 'no-such-command'\n"],
  ])('%j: a usage error in the one style of every error (ppn-fleet: ...)', async (args, first) => {
    const io = new FakeIo({}, fleetOfOne);
    expect(await run(args, io)).toBe(ExitCode.Usage);
    expect(io.stderr.text.startsWith(first)).toBe(true);
    expect(io.stderr.text).not.toMatch(/^error:/m);
  });

  it('vm without a command it has points at ppn-fleet vms for the listing', async () => {
    for (const [args, says] of [
      [
        ['vm', 'list'],
        'ppn-fleet: vm has no command list: it takes create, delete, stop, start, restart, console, backup, copies, restore or move (see ppn-fleet vm --help); the VMs are listed by ppn-fleet vms\n',
      ],
      [
        ['vm'],
        'ppn-fleet: vm needs a command: create, delete, stop, start, restart, console, backup, copies, restore or move (see ppn-fleet vm --help); the VMs are listed by ppn-fleet vms\n',
      ],
    ] as const) {
      const io = new FakeIo({}, fleetOfOne);
      expect(await run([...args], io)).toBe(ExitCode.Usage);
      expect(io.stderr.text).toBe(says);
      expect(io.requests).toHaveLength(0);
    }
  });

  it('refuses a bad VM_FLEET_ENDPOINT or VM_FLEET_API_TOKEN naming it, never its value', async () => {
    const endpoint = new FakeIo({ VM_FLEET_ENDPOINT: 'controller:9203' }, fleetOfOne);
    expect(await run(['nodes'], endpoint)).toBe(ExitCode.Usage);
    expect(endpoint.stderr.text).toContain('VM_FLEET_ENDPOINT must be an http(s) URL');

    const token = new FakeIo({ VM_FLEET_API_TOKEN: 'short-secret' }, fleetOfOne);
    expect(await run(['nodes'], token)).toBe(ExitCode.Usage);
    expect(token.stderr.text).toContain('VM_FLEET_API_TOKEN must be 16 to 1024 characters');
    expect(token.stderr.text).not.toContain('short-secret');
  });
});

describe('ppn-fleet calling the controller', () => {
  let folder: string;
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'ppn-fleet-spec-'));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it('reaches http://127.0.0.1:9203 by default, VM_FLEET_ENDPOINT, or --endpoint over both', async () => {
    const byDefault = new FakeIo({}, fleetOfOne);
    await run(['nodes', '--json'], byDefault);
    expect(byDefault.requests[0].url).toBe('http://127.0.0.1:9203/v1/nodes');

    const fromEnvironment = new FakeIo(
      { VM_FLEET_ENDPOINT: 'https://fleet.example:9443/' },
      fleetOfOne,
    );
    await run(['nodes', '--json'], fromEnvironment);
    expect(fromEnvironment.requests[0].url).toBe('https://fleet.example:9443/v1/nodes');

    const option = new FakeIo({ VM_FLEET_ENDPOINT: 'not a url' }, fleetOfOne);
    expect(await run(['nodes', '--json', '--endpoint', 'http://10.8.0.1:9203'], option)).toBe(
      ExitCode.Ok,
    );
    expect(option.requests[0].url).toBe('http://10.8.0.1:9203/v1/nodes');
  });

  it('sends the API token from VM_FLEET_API_TOKEN or its file, and never prints it', async () => {
    const token = 'cli-spec-api-token-0123456789';
    const direct = new FakeIo({ VM_FLEET_API_TOKEN: token }, fleetOfOne);
    expect(await run(['nodes'], direct)).toBe(ExitCode.Ok);
    expect(direct.requests.map((request) => request.headers.get('authorization'))).toEqual([
      `Bearer ${token}`,
      `Bearer ${token}`,
    ]);

    const file = join(folder, 'token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    const fromFile = new FakeIo({ VM_FLEET_API_TOKEN_FILE: file }, fleetOfOne);
    expect(await run(['vms', '--json'], fromFile)).toBe(ExitCode.Ok);
    expect(fromFile.requests[0].headers.get('authorization')).toBe(`Bearer ${token}`);

    writeFileSync(join(folder, 'open'), token, { mode: 0o644 });
    const open = new FakeIo({ VM_FLEET_API_TOKEN_FILE: join(folder, 'open') }, fleetOfOne);
    expect(await run(['vms'], open)).toBe(ExitCode.Usage);
    expect(open.stderr.text).toContain('chmod 600');
    for (const io of [direct, fromFile, open]) {
      expect(io.stdout.text + io.stderr.text).not.toContain(token);
    }
  });

  it('--json prints the answer exactly as the controller sent it', async () => {
    const body = '[ {"vm_id":"vm-1",  "state":"Running"} ]';
    const io = new FakeIo({}, () => json(body));
    expect(await run(['vms', '--json', '--tenant', 'acme'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe(`${body}\n`);
    expect(io.requests[0].url).toBe('http://127.0.0.1:9203/v1/vms?tenant_id=acme');
  });

  it('a refusal exits 1 with the API message as is; a 401 names VM_FLEET_API_TOKEN', async () => {
    const placement =
      'no node can take 999999 MB: node-a: needs 1000511 MB, has 4096 MB; node-b: reserved';
    const refused = new FakeIo({}, () => refusal(503, placement));
    expect(
      await run(['vm', 'create', '--type', 'web', '--ram', '999999', '--vcpus', '1'], refused),
    ).toBe(ExitCode.Refused);
    const key = refused.requests[0].headers.get('idempotency-key')!;
    expect(refused.stderr.text).toBe(
      `ppn-fleet: ${placement}\nno node was asked to make it by this request; run the same command with --key ${key} to try again (the same key never makes a second VM)\n`,
    );
    expect(refused.stdout.text).toBe('');

    const unauthorized = new FakeIo({}, () =>
      refusal(
        401,
        'this route needs the API token: send Authorization: Bearer <VM_FLEET_API_TOKEN>',
      ),
    );
    expect(await run(['status'], unauthorized)).toBe(ExitCode.Refused);
    expect(unauthorized.stderr.text).toContain(
      'set VM_FLEET_API_TOKEN (or VM_FLEET_API_TOKEN_FILE) to the API token of the controller',
    );

    const notFound = new FakeIo(
      {},
      controllerAnd(() => refusal(404, 'vm vm-9 is not listed on any live node')),
    );
    expect(await run(['vm', 'delete', 'vm-9'], notFound)).toBe(ExitCode.Refused);
    expect(notFound.requests.map(({ method }) => method)).toEqual(['GET', 'DELETE']);
    expect(notFound.stderr.text).toBe('ppn-fleet: vm vm-9 is not listed on any live node\n');

    const silent = new FakeIo(
      {},
      controllerAnd(() =>
        refusal(409, 'vm vm-9 is on node node-b, silent since 2026-08-06T12:00:00.000Z'),
      ),
    );
    expect(await run(['vm', 'delete', 'vm-9'], silent)).toBe(ExitCode.Refused);
    expect(new URL(silent.requests[1].url).search).toBe('');
    expect(silent.stderr.text).toContain('silent since');

    const forgotten = new FakeIo(
      {},
      controllerAnd(() => new Response(null, { status: 204 })),
    );
    expect(await run(['vm', 'delete', 'vm-9', '--forget'], forgotten)).toBe(ExitCode.Ok);
    expect(new URL(forgotten.requests[1].url).search).toBe('?forget=true');
    expect(forgotten.stdout.text).toBe('forgot vm-9 (nothing was stopped)\n');

    const flood = new FakeIo({}, () => refusal(503, 'x'.repeat(1_000_000)));
    expect(await run(['nodes'], flood)).toBe(ExitCode.Refused);
    expect(flood.stderr.text.length).toBeLessThan(17_000);

    const garbled = new FakeIo({}, () => refusal(502, 'agent said \u001b[2Jhi'));
    expect(await run(['nodes'], garbled)).toBe(ExitCode.Refused);
    expect(garbled.stderr.text).toBe('ppn-fleet: agent said ?[2Jhi\n');
  });

  it('an unreachable controller exits 3', async () => {
    const io = new FakeIo({}, connectionRefused);
    expect(await run(['nodes'], io)).toBe(ExitCode.Unreachable);
    expect(io.stderr.text).toBe(
      'ppn-fleet: cannot reach the controller at http://127.0.0.1:9203: ECONNREFUSED\n',
    );
  });

  it('node-token prints the node token of VM_FLEET_NODE_SECRET and nothing else', async () => {
    const secret = 'n'.repeat(40);
    const io = new FakeIo({ VM_FLEET_NODE_SECRET: secret }, fleetOfOne);
    expect(await run(['node-token', 'node-a'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe(`${deriveNodeToken(secret, 'node-a')}\n`);
    expect(io.stderr.text).toBe('');
    expect(io.requests).toHaveLength(0);

    const missing = new FakeIo({}, fleetOfOne);
    expect(await run(['node-token', 'node-a'], missing)).toBe(ExitCode.Usage);
    expect(missing.stderr.text).toContain('VM_FLEET_NODE_SECRET');
    expect(missing.stdout.text).toBe('');
  });

  it('tenant-token prints the tenant token of VM_FLEET_TENANT_SECRET and nothing else', async () => {
    const secret = 't'.repeat(40);
    const io = new FakeIo({ VM_FLEET_TENANT_SECRET: secret }, fleetOfOne);
    expect(await run(['tenant-token', 'acme'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe(`${deriveTenantToken(secret, 'acme')}\n`);
    expect(io.stderr.text).toBe('');
    expect(io.requests).toHaveLength(0);

    const missing = new FakeIo({}, fleetOfOne);
    expect(await run(['tenant-token', 'acme'], missing)).toBe(ExitCode.Usage);
    expect(missing.stderr.text).toContain('VM_FLEET_TENANT_SECRET');
    const bad = new FakeIo({ VM_FLEET_TENANT_SECRET: secret }, fleetOfOne);
    expect(await run(['tenant-token', 'not an id'], bad)).toBe(ExitCode.Usage);
    expect(bad.stdout.text).toBe('');
  });
});

describe('ppn-fleet vm create', () => {
  const ARGS = ['vm', 'create', '--type', 'web', '--ram', '512', '--vcpus', '1'];

  it('always sends an Idempotency-Key, a new one unless --key gives it, and the request', async () => {
    const io = new FakeIo({}, () => json(vm('Provisioning'), 201));
    expect(await run([...ARGS, '--tenant', 'acme', '--node', 'node-a', '--kvm'], io)).toBe(
      ExitCode.Ok,
    );
    const [request] = io.requests;
    expect(request.method).toBe('POST');
    expect(request.headers.get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await request.json()).toEqual({
      vm_type: 'web',
      ram_mb: 512,
      vcpu_count: 1,
      prefer_kvm: true,
      preferred_node: 'node-a',
      tenant_id: 'acme',
    });
    expect(io.stdout.text).toBe('created vm-1 (web, 512 MB, 1 vCPU) on node-a: Provisioning\n');

    const keyed = new FakeIo({}, () => json(vm('Provisioning'), 201));
    await run([...ARGS, '--key', 'deploy-42'], keyed);
    expect(keyed.requests[0].headers.get('idempotency-key')).toBe('deploy-42');
  });

  it('sends --disk as disk_gb, and refuses one out of its bounds before asking', async () => {
    const io = new FakeIo({}, () => json(vm('Provisioning'), 201));
    expect(await run([...ARGS, '--disk', '20'], io)).toBe(ExitCode.Ok);
    expect(await io.requests[0].json()).toMatchObject({ disk_gb: 20 });
    const bad = new FakeIo({}, () => json(vm('Provisioning'), 201));
    expect(await run([...ARGS, '--disk', '0'], bad)).toBe(ExitCode.Usage);
    expect(bad.stderr.text).toContain("option '--disk <gb>' argument '0' is invalid");
    expect(bad.requests).toHaveLength(0);
  });

  it('sends --copies and --copy-every as copies, every_s 60 by default, and refuses bad ones naming the flag before asking', async () => {
    const io = new FakeIo({}, () => json(vm('Provisioning'), 201));
    expect(await run([...ARGS, '--copies', '2', '--copy-every', '30'], io)).toBe(ExitCode.Ok);
    expect(await io.requests[0].json()).toMatchObject({ copies: { count: 2, every_s: 30 } });
    const none = new FakeIo({}, () => json(vm('Provisioning'), 201));
    expect(await run([...ARGS, '--copies', '0'], none)).toBe(ExitCode.Ok);
    expect(await none.requests[0].json()).toMatchObject({ copies: { count: 0, every_s: 60 } });
    const plain = new FakeIo({}, () => json(vm('Provisioning'), 201));
    await run(ARGS, plain);
    expect(Object.keys((await plain.requests[0].json()) as object)).not.toContain('copies');
    for (const [flags, said] of [
      [['--copies', '3'], "option '--copies <n>' argument '3' is invalid"],
      [
        ['--copies', '1', '--copy-every', '29'],
        "option '--copy-every <s>' argument '29' is invalid",
      ],
      [
        ['--copies', '1', '--copy-every', '86401'],
        "option '--copy-every <s>' argument '86401' is invalid",
      ],
      [['--copy-every', '60'], '--copy-every needs --copies'],
    ] as const) {
      const bad = new FakeIo({}, () => json(vm('Provisioning'), 201));
      expect(await run([...ARGS, ...flags], bad)).toBe(ExitCode.Usage);
      expect(bad.stderr.text).toContain(said);
      expect(bad.requests).toHaveLength(0);
    }
  });

  it('retries a lost connection with the same key', async () => {
    let calls = 0;
    const io = new FakeIo({}, () =>
      ++calls < 3 ? connectionRefused() : json(vm('Provisioning'), 201),
    );
    expect(await run([...ARGS, '--json'], io)).toBe(ExitCode.Ok);
    const keys = io.requests.map((request) => request.headers.get('idempotency-key'));
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(JSON.parse(io.stdout.text)).toEqual(vm('Provisioning'));
  });

  it('gives up after its retries with exit 3, saying nothing was made and naming the key', async () => {
    const io = new FakeIo({}, connectionRefused);
    expect(await run(ARGS, io)).toBe(ExitCode.Unreachable);
    expect(io.requests).toHaveLength(4);
    const key = io.requests[0].headers.get('idempotency-key')!;
    expect(io.stderr.text).toContain(
      `the controller was never reached, so no VM was made; run the same command with --key ${key} to try again`,
    );
  });

  it.each([
    [502, 'agent of node node-a could not be reached'],
    [500, 'Internal server error'],
    [507, 'node node-a refused the VM: VM_DISK_DIR is full'],
  ])(
    'prints the exact --key to retry with after a %i, saying the VM may exist',
    async (status, message) => {
      const io = new FakeIo({}, () => refusal(status, message));
      expect(await run(ARGS, io)).toBe(ExitCode.Refused);
      const key = io.requests[0].headers.get('idempotency-key')!;
      expect(io.stderr.text).toBe(
        `ppn-fleet: ${message}\nthe VM may exist: run the same command with --key ${key} to find out without creating a second one\n`,
      );
      expect(io.requests).toHaveLength(1);
    },
  );

  it('prints the key after an answer that never came (a timeout once connected): the VM may exist', async () => {
    const io = new FakeIo({}, () => {
      throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    });
    expect(await run([...ARGS, '--key', 'deploy-7'], io)).toBe(ExitCode.Unreachable);
    expect(io.stderr.text).toContain(
      'the VM may exist: run the same command with --key deploy-7 to find out without creating a second one',
    );
  });

  it('says a 503 placed the VM on no node, with the key, and a 4xx made nothing, without it', async () => {
    const placed = new FakeIo({}, () => refusal(503, 'no node has 1024 MB free'));
    expect(await run([...ARGS, '--key', 'deploy-8'], placed)).toBe(ExitCode.Refused);
    expect(placed.stderr.text).toBe(
      'ppn-fleet: no node has 1024 MB free\nno node was asked to make it by this request; run the same command with --key deploy-8 to try again (the same key never makes a second VM)\n',
    );
    const unfit = new FakeIo({}, () => refusal(422, 'preferred_node node-z is not enrolled'));
    expect(await run([...ARGS, '--key', 'deploy-9'], unfit)).toBe(ExitCode.Refused);
    expect(unfit.stderr.text).toBe('ppn-fleet: preferred_node node-z is not enrolled\n');
  });

  it('--wait follows the listing until Running, with a progress line, then the SSH target', async () => {
    const states = ['Provisioning', 'Provisioning', 'Running'];
    const io = new FakeIo({}, (request) => {
      const path = new URL(request.url).pathname;
      if (request.method === 'POST') return json(vm('Provisioning'), 201);
      if (path === '/v1/vms') return json([vm(states.shift() ?? 'Running')]);
      return fleetOfOne(request);
    });
    expect(await run([...ARGS, '--wait-running'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe(
      'created vm-1 (web, 512 MB, 1 vCPU) on node-a: Provisioning\n' +
        'vm-1 is Running on node-a: ssh -p 22022 debian@10.8.0.2\n',
    );
    expect(io.stderr.text).toBe(
      'vm-1 on node-a: Provisioning, 0 s\nvm-1 on node-a: Provisioning, 1 s\nvm-1 on node-a: Provisioning, 2 s\n',
    );
    // Running is all --wait-running waits for: the guest's SSH is never looked at.
    expect(io.probes).toEqual([]);
  });

  describe('--wait: until the guest answers', () => {
    function runningFleet(hostPorts = vm('Running').host_ports) {
      return (request: Request): Response | Promise<Response> => {
        const path = new URL(request.url).pathname;
        if (request.method === 'POST') return json({ ...vm('Provisioning'), host_ports: [] }, 201);
        if (path === '/v1/vms') return json([{ ...vm('Running'), host_ports: hostPorts }]);
        return fleetOfOne(request);
      };
    }

    it('waits past Running until SSH says its banner, progress on stderr, then the ssh line', async () => {
      const io = new FakeIo({}, runningFleet());
      io.portAnswers.push(
        { kind: 'refused' },
        { kind: 'closed' },
        { kind: 'open', text: '' },
        { kind: 'open', text: 'SSH-2.0-OpenSSH_9.2p1\r\n' },
      );
      expect(await run([...ARGS, '--wait'], io)).toBe(ExitCode.Ok);
      expect(io.probes).toEqual(Array(4).fill('10.8.0.2:22022'));
      expect(io.stdout.text).toBe(
        'created vm-1 (web, 512 MB, 1 vCPU) on node-a: Provisioning\n' +
          'vm-1 is Running on node-a: ssh -p 22022 debian@10.8.0.2\n',
      );
      expect(io.stderr.text).toBe(
        'vm-1 on node-a: Provisioning, 0 s\n' +
          'vm-1: Running, waiting for SSH at 10.8.0.2:22022 (connection refused or unanswered), 3 s\n' +
          'vm-1: Running, waiting for SSH at 10.8.0.2:22022 (connection reset: sshd in the guest is not up yet), 6 s\n' +
          'vm-1: Running, waiting for SSH at 10.8.0.2:22022 (connected, no SSH banner yet), 9 s\n',
      );
    });

    it('gives up at --timeout, counting the time until Running, saying what it last saw', async () => {
      const io = new FakeIo({}, runningFleet());
      for (let i = 0; i < 100; i++) io.portAnswers.push({ kind: 'closed' });
      expect(await run([...ARGS, '--wait', '--timeout', '10'], io)).toBe(ExitCode.Refused);
      expect(io.stderr.text).toContain(
        'ppn-fleet: vm-1 is Running, but SSH did not answer at 10.8.0.2:22022 within 10 s (--timeout): connection reset: sshd in the guest is not up yet\n',
      );
      expect(io.probes.length).toBeLessThanOrEqual(4);
    });

    it("--wait-port waits for the guest's service to answer: a connection held open (QEMU's forward) is not an answer", async () => {
      const ports = [
        { host_port: 22022, guest_port: 22, protocol: 'tcp' },
        { host_port: 40080, guest_port: 80, protocol: 'tcp' },
      ];
      const io = new FakeIo({}, runningFleet(ports));
      io.portAnswers.push(
        { kind: 'closed' },
        { kind: 'open', text: '' },
        { kind: 'open', text: '' },
        { kind: 'open', text: 'HTTP/1.1 200 OK\r\n' },
      );
      expect(await run([...ARGS, '--port', '80/tcp', '--wait-port', '80'], io)).toBe(ExitCode.Ok);
      expect(io.probes).toEqual(Array(4).fill('10.8.0.2:40080'));
      expect(io.probeRequests).toEqual(Array(4).fill(PORT_REQUEST));
      expect(io.stderr.text).toContain(
        "(connected, but nothing answered a request: the forward holds the connection until the guest's service is up)",
      );
      const created = io.requests.find((request) => request.method === 'POST')!;
      expect(((await created.json()) as { ports: unknown }).ports).toEqual([
        { guest_port: 80, protocol: 'tcp' },
      ]);
      expect(io.stdout.text).toContain('guest port 80/tcp answers at 10.8.0.2:40080\n');
      expect(io.stderr.text).toContain(
        '(accepted and closed: nothing listens on guest port 80 yet)',
      );
    });

    it.each([
      [
        ['--port', '80/sctp'],
        "option '--port <[host_port:]guest_port[/tcp|udp]>' argument '80/sctp' is invalid",
      ],
      [['--port', '80:80'], 'Its host_port must be from 1024 to 65535'],
      [
        ['--port', '80', '--port', '80/tcp'],
        '--port: ports[1].guest_port: 80/tcp is already asked for by ports[0]',
      ],
      [['--wait-port', '53/udp'], 'Only a tcp port can be waited for'],
      [['--wait-port', '80'], '--wait-port 80: no --port publishes guest port 80/tcp'],
    ])('refuses %j as a usage error naming the flag, sending nothing', async (flags, message) => {
      const io = new FakeIo({}, runningFleet());
      expect(await run([...ARGS, ...flags], io)).toBe(ExitCode.Usage);
      expect(io.stderr.text).toContain(message);
      expect(io.requests).toEqual([]);
    });
  });

  it('--wait answered a silent VM (a keyed retry) prints it, no SSH target, whether or not its node id is listed', async () => {
    const silent = { ...vm('Running'), node_silent_since: '2026-08-06T11:59:00.000Z' };
    // node-a listed: another machine heartbeats as node-a now; 404: the node dropped out.
    for (const nodeAnswer of [json(NODE), refusal(404, 'node node-a is not enrolled')]) {
      const io = new FakeIo({}, (request) => {
        const path = new URL(request.url).pathname;
        if (request.method === 'POST') return json(silent, 200);
        if (path === '/v1/vms') return json([silent]);
        if (path === '/v1/nodes/node-a') return nodeAnswer.clone();
        return fleetOfOne(request);
      });
      expect(await run([...ARGS, '--key', 'deploy-42', '--wait'], io)).toBe(ExitCode.Ok);
      expect(io.stdout.text).toBe(
        'created vm-1 (web, 512 MB, 1 vCPU) on node-a: Running\n' +
          'vm-1 is Running on node-a as last reported at 2026-08-06T11:59:00.000Z, but its node is silent (node_silent_since): no SSH target\n',
      );
      expect(io.stdout.text).not.toContain('ssh -p');
      expect(io.requests.map((request) => new URL(request.url).pathname)).toEqual(['/v1/vms']);
    }
  });

  it('--wait says in its progress line that the node of the VM it follows is silent', async () => {
    const silent = { ...vm('Provisioning'), node_silent_since: '2026-08-06T11:59:00.000Z' };
    const io = new FakeIo({}, (request) =>
      request.method === 'POST' ? json(silent, 200) : json([silent]),
    );
    expect(await run([...ARGS, '--wait', '--timeout', '1'], io)).toBe(ExitCode.Refused);
    expect(io.stderr.text).toContain('vm-1 on node-a (node silent): Provisioning, 0 s\n');
    expect(io.stderr.text).toContain('ppn-fleet: vm-1 is still Provisioning after 1 s (--timeout)');
  });

  it('--wait exits 1 when the VM goes to Error, or is not Running within --timeout', async () => {
    const error = new FakeIo({}, (request) =>
      request.method === 'POST' ? json(vm('Provisioning'), 201) : json([vm('Error')]),
    );
    expect(await run([...ARGS, '--wait'], error)).toBe(ExitCode.Refused);
    expect(error.stderr.text).toContain('ppn-fleet: vm-1 is in Error on node-a');

    const slow = new FakeIo({}, (request) =>
      request.method === 'POST' ? json(vm('Provisioning'), 201) : json([vm('Provisioning')]),
    );
    expect(await run([...ARGS, '--wait', '--timeout', '5'], slow)).toBe(ExitCode.Refused);
    expect(slow.stderr.text).toContain(
      'ppn-fleet: vm-1 is still Provisioning after 5 s (--timeout)',
    );
  });
});

describe('ppn-fleet output', () => {
  it('colours tables on a terminal only, and never with NO_COLOR', async () => {
    const tty = new FakeIo({}, fleetOfOne, true);
    await run(['nodes'], tty);
    expect(tty.stdout.text).toContain('\u001b[1mNODE');

    const noColour = new FakeIo({ NO_COLOR: '1' }, fleetOfOne, true);
    await run(['nodes'], noColour);
    expect(noColour.stdout.text).not.toContain('\u001b[');

    const pipe = new FakeIo({}, fleetOfOne, false);
    await run(['nodes'], pipe);
    expect(pipe.stdout.text).toBe(noColour.stdout.text);
    expect(pipe.stdout.text).toMatch(
      /^NODE +HOSTNAME +WG IP +RAM FREE +VMS +KVM +RESERVED +LAST BEAT\nnode-a +a +10\.8\.0\.2 +4096 MB +0 +yes +no +3 s ago\n$/,
    );
  });

  it('node shows one node, measured against the controller time', async () => {
    const io = new FakeIo({}, fleetOfOne);
    expect(await run(['node', 'node-a'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toContain('WireGuard IP:    10.8.0.2');
    expect(io.stdout.text).toContain('last heartbeat:  2026-08-06T12:00:00.000Z (3 s ago)');
  });
});

/** The control characters of `text` but its line breaks. */
function controlCharactersIn(text: string): string[] {
  return [...text.replace(/\n/g, '').matchAll(CONTROL_CHARACTERS)].map(([character]) => character);
}

/** A body streamed in 1 MiB chunks without end, counting what was pulled and whether it was cancelled. */
function endlessBody(): {
  stream: ReadableStream<Uint8Array>;
  pulled: () => number;
  cancelled: () => boolean;
} {
  let pulled = 0;
  let cancelled = false;
  const chunk = new Uint8Array(1024 * 1024).fill(0x20);
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += chunk.byteLength;
      controller.enqueue(chunk);
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, pulled: () => pulled, cancelled: () => cancelled };
}

describe('ppn-fleet against a broken or hostile controller', () => {
  const TOO_LARGE = `answer larger than ${MAX_ANSWER_BYTES} bytes`;

  it('reads at most 16 MiB of an answer, success or error, then cancels it and exits 1', async () => {
    for (const status of [200, 500]) {
      const body = endlessBody();
      const io = new FakeIo({}, () => new Response(body.stream, { status }));
      expect(await run(['vms', '--json'], io)).toBe(ExitCode.Refused);
      expect(io.stderr.text).toBe(
        `ppn-fleet: the controller at http://127.0.0.1:9203 sent an ${TOO_LARGE}\n`,
      );
      expect(io.stdout.text).toBe('');
      expect(body.cancelled()).toBe(true);
      expect(body.pulled()).toBeLessThanOrEqual(MAX_ANSWER_BYTES + 3 * 1024 * 1024);
    }

    // A Content-Length over the cap: refused before a byte of the body is read.
    const declared = endlessBody();
    const io = new FakeIo(
      {},
      () =>
        new Response(declared.stream, {
          headers: { 'content-length': String(MAX_ANSWER_BYTES + 1) },
        }),
    );
    expect(await run(['nodes'], io)).toBe(ExitCode.Refused);
    expect(io.stderr.text).toContain(TOO_LARGE);
    expect(declared.cancelled()).toBe(true);

    // Up to the cap is read whole.
    const padded = `[${' '.repeat(MAX_ANSWER_BYTES - 2)}]`;
    const atCap = new FakeIo({}, () => json(padded));
    expect(await run(['vms', '--json'], atCap)).toBe(ExitCode.Ok);
    expect(atCap.stdout.text).toBe(`${padded}\n`);
  });

  it('shows strings of the answer without control characters, and no SSH target from a bad address', async () => {
    const hostile = {
      ...NODE,
      hostname: 'h\u001b]0;owned\u0007a;reboot',
      wg_ip: '10.8.0.2;rm -rf ~',
      last_heartbeat: '2026-08-06T12:00:00.000Z\u001b[31m',
    };
    // Free text in a VM's listing (its node's silence, its copy's time) is checked as text only.
    const hostileVm = {
      ...vm('Running'),
      node_id: hostile.node_id,
      node_silent_since: '2026-08-06T12:00:00.000Z\u009b2J',
    };
    const io = new FakeIo({}, (request) => {
      const path = new URL(request.url).pathname;
      if (path === '/v1/fleet')
        return json({ nodes: [hostile], last_updated: '2026-08-06T12:00:03.000Z' });
      if (path === '/v1/nodes') return json([hostile]);
      if (path.startsWith('/v1/nodes/')) return json(hostile);
      return json([hostileVm]);
    });
    for (const args of [['nodes'], ['node', 'node-a'], ['vms'], ['status']]) {
      io.stdout.text = '';
      expect(await run(args, io)).toBe(ExitCode.Ok);
      expect(controlCharactersIn(io.stdout.text)).toEqual([]);
    }
    expect(io.stdout.text).toContain('node-a');
    await run(['vms'], io);
    expect(io.stdout.text).not.toContain('ssh -p');
    expect(io.stdout.text).not.toContain('rm -rf');

    // The outcome and a failure's message quote the controller too (ids are checked: see below).
    let polls = 0;
    const typed = vm('Running');
    const waiting = new FakeIo({}, (request) => {
      if (request.method === 'POST') return json({ ...typed, state: 'Provisioning' }, 201);
      if (new URL(request.url).pathname === '/v1/vms') {
        return json([{ ...typed, state: ++polls < 2 ? 'Provisioning' : 'Error' }]);
      }
      return json(hostile);
    });
    expect(
      await run(
        ['vm', 'create', '--type', 'web', '--ram', '512', '--vcpus', '1', '--wait'],
        waiting,
      ),
    ).toBe(ExitCode.Refused);
    expect(waiting.stdout.text).toContain('created vm-1 (web, 512 MB');
    expect(waiting.stderr.text).toContain('vm-1 on node-a: Provisioning, 0 s');
    expect(waiting.stderr.text).toContain('ppn-fleet: vm-1 is in Error on node-a');
    expect(controlCharactersIn(waiting.stdout.text + waiting.stderr.text)).toEqual([]);

    // A field the API bounds (a VM type, a tenant id) with a control character in it is refused
    // as an answer the API does not give, naming the field and not quoting it.
    for (const [field, value] of [
      ['vm_type', 'web\u009b2J'],
      ['tenant_id', 'acme\r\nforged line'],
    ]) {
      const refused = new FakeIo({}, () => json([{ ...vm('Running'), [field]: value }]));
      expect(await run(['vms'], refused)).toBe(ExitCode.Refused);
      expect(refused.stderr.text).toContain(
        `unexpected answer from the controller at http://127.0.0.1:9203 (200: 0.${field} not as the API gives it)`,
      );
      expect(controlCharactersIn(refused.stderr.text)).toEqual([]);
      expect(refused.stderr.text).not.toContain('forged');
    }
  });

  it('--json prints the answer as it came, control characters and all', async () => {
    const body = JSON.stringify([{ ...NODE, hostname: 'h\u001b[2J' }]);
    const io = new FakeIo({}, () => json(body));
    expect(await run(['nodes', '--json'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe(`${body}\n`);
  });

  it('refuses an answer not of the shape the API gives it, exit 1, without waiting on it', async () => {
    const ARGS = ['vm', 'create', '--type', 'web', '--ram', '512', '--vcpus', '1', '--wait'];
    const empty = new FakeIo({}, () => json({}, 201));
    expect(await run(ARGS, empty)).toBe(ExitCode.Refused);
    expect(empty.stderr.text).toContain('ppn-fleet: unexpected answer from the controller');
    expect(empty.requests).toHaveLength(1);
    expect(empty.now()).toBe(0);

    for (const [args, answer] of [
      [['vms'], {}],
      [['vms'], [{ ...vm('Running'), state: 'Sleeping' }]],
      [['vms'], [{ ...vm('Running'), vm_id: '../../etc' }]],
      [['vms'], [{ ...vm('Running'), node_id: 'node-\u001b]0;owned\u0007a' }]],
      [['nodes'], [{ ...NODE, node_id: 'node a' }]],
      [['nodes'], { nodes: [] }],
      [['node', 'node-a'], { ...NODE, ram_available_mb: '4096' }],
      [['status'], { nodes: 'none', last_updated: '2026-08-06T12:00:03.000Z' }],
    ] as Array<[string[], unknown]>) {
      const io = new FakeIo({}, () => json(answer));
      expect(await run(args, io)).toBe(ExitCode.Refused);
      expect(io.stderr.text).toContain('unexpected answer from the controller');
      expect(io.stdout.text).toBe('');
    }
  });

  it('warns once when the token would go over plain http to another machine', async () => {
    const env = { VM_FLEET_API_TOKEN: 'cli-spec-api-token-0123456789' };
    const warning = /warning: the API token goes unencrypted over http to 10\.8\.0\.1:9203/;
    const remote = new FakeIo({ ...env, VM_FLEET_ENDPOINT: 'http://10.8.0.1:9203' }, fleetOfOne);
    expect(await run(['nodes'], remote)).toBe(ExitCode.Ok);
    expect(remote.stderr.text.match(new RegExp(warning, 'g'))).toHaveLength(1);
    expect(remote.stdout.text).toContain('node-a');

    for (const endpoint of [
      'https://fleet.example:9443',
      'http://127.0.0.1:9203',
      'http://localhost:9203',
      'http://[::1]:9203',
    ]) {
      const quiet = new FakeIo({ ...env, VM_FLEET_ENDPOINT: endpoint }, fleetOfOne);
      expect(await run(['nodes'], quiet)).toBe(ExitCode.Ok);
      expect(quiet.stderr.text).toBe('');
    }
    const noToken = new FakeIo({ VM_FLEET_ENDPOINT: 'http://10.8.0.1:9203' }, fleetOfOne);
    await run(['nodes'], noToken);
    expect(noToken.stderr.text).toBe('');
  });

  it('an endpoint whose port fetch refuses (bad port) is a usage error, exit 2, in words an operator reads', async () => {
    const io = new FakeIo({ VM_FLEET_ENDPOINT: 'http://10.8.0.1:6000' }, () => {
      throw new TypeError('fetch failed', { cause: new Error('bad port') });
    });
    expect(await run(['nodes'], io)).toBe(ExitCode.Usage);
    expect(io.stderr.text).toBe(
      "ppn-fleet: the endpoint http://10.8.0.1:6000 names port 6000, one that no HTTP client may connect to (an unsafe port, as browsers block it); nothing was sent. The controller's API listens on 9203, its operations listener on 9206\n",
    );
  });

  it.each([
    ['an agent (404 for /v1/fleet)', () => refusal(404, 'Cannot GET /v1/fleet'), 'answered 404'],
    [
      'something else (not JSON)',
      () => new Response('<html>', { status: 200 }),
      'answered what it does not',
    ],
  ])(
    'vm delete (--forget or not) at %s deletes nothing and says it is not a controller, exit 2',
    async (_what, answer, says) => {
      for (const args of [
        ['vm', 'delete', 'vm-9'],
        ['vm', 'delete', 'vm-9', '--forget'],
      ]) {
        const io = new FakeIo({ VM_FLEET_ENDPOINT: 'http://10.8.0.2:9204' }, (request) =>
          request.method === 'GET' ? answer() : new Response(null, { status: 204 }),
        );
        expect(await run(args, io)).toBe(ExitCode.Usage);
        expect(io.requests.map(({ method }) => method)).toEqual(['GET']);
        expect(io.stdout.text).toBe('');
        expect(io.stderr.text).toMatch(
          /^ppn-fleet: http:\/\/10\.8\.0\.2:9204 is not a fleet controller: GET \/v1\/fleet /,
        );
        expect(io.stderr.text).toContain(says);
        expect(io.stderr.text).toContain(
          `is it an agent's port? the controller's API listens on 9203); nothing was ${args.length === 4 ? 'forgotten' : 'deleted'}`,
        );
      }
    },
  );

  it('vm delete at a controller that refuses the API token says so, as any command does', async () => {
    const io = new FakeIo({}, () => refusal(401, 'this route needs the API token'));
    expect(await run(['vm', 'delete', 'vm-9'], io)).toBe(ExitCode.Refused);
    expect(io.requests.map(({ method }) => method)).toEqual(['GET']);
    expect(io.stderr.text).toContain('set VM_FLEET_API_TOKEN');
  });

  it("vm delete with a tenant's token (403 for /v1/fleet) deletes: only a controller refuses so", async () => {
    const io = new FakeIo({}, (request) =>
      request.method === 'GET'
        ? refusal(403, "tenant acme's token opens only its own VMs")
        : new Response(null, { status: 204 }),
    );
    expect(await run(['vm', 'delete', 'vm-9'], io)).toBe(ExitCode.Ok);
    expect(io.requests.map(({ method }) => method)).toEqual(['GET', 'DELETE']);
  });

  it('a bug prints its message only, its stack trace with PPN_FLEET_DEBUG=1', () => {
    const bug = new Error('something broke');
    const plain = new FakeIo({}, fleetOfOne);
    expect(exitCodeOf(bug, plain)).toBe(ExitCode.Refused);
    expect(plain.stderr.text).toBe('ppn-fleet: something broke\n');

    const debug = new FakeIo({ PPN_FLEET_DEBUG: '1' }, fleetOfOne);
    expect(exitCodeOf(bug, debug)).toBe(ExitCode.Refused);
    expect(debug.stderr.text).toContain('ppn-fleet: Error: something broke\n    at ');
  });
});

/** A life cycle as the operations listener relays it: running as asked, nothing under way. */
function lifeCycle(overrides: object = {}) {
  return { ...vmLifeCycle(), ...overrides };
}

const OPS = 'http://127.0.0.1:9206';

/** The requests a command sent to the operations listener, as `METHOD /path`. */
const sent = (io: FakeIo) =>
  io.requests.map((request) => `${request.method} ${request.url.replace(OPS, '')}`);

describe('ppn-fleet vm stop|start|restart|console (the operations listener)', () => {
  it('stop sends force and timeout_s to the operations listener, by default at 127.0.0.1:9206', async () => {
    const bodies: unknown[] = [];
    const io = new FakeIo({}, async (request) => {
      bodies.push(await request.json());
      return json(lifeCycle({ operation: 'stopping', desired_state: 'stopped' }), 202);
    });
    expect(await run(['vm', 'stop', 'vm-1'], io)).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual(['POST /v1/vms/vm-1/stop']);
    expect(io.stdout.text).toBe('stopping vm-1: ACPI power-down, QEMU ended after 60 s\n');

    const forced = new FakeIo(
      { VM_FLEET_OPS_ENDPOINT: 'http://10.8.0.1:9206' },
      async (request) => {
        bodies.push(await request.json());
        return json(lifeCycle({ operation: 'restarting' }), 202);
      },
    );
    expect(
      await run(
        [
          'vm',
          'restart',
          'vm-1',
          '--force',
          '--timeout',
          '5',
          '--ops-endpoint',
          'http://[::1]:9300',
        ],
        forced,
      ),
    ).toBe(ExitCode.Ok);
    expect(forced.requests[0].url).toBe('http://[::1]:9300/v1/vms/vm-1/restart');
    expect(forced.stdout.text).toBe('restarting vm-1: reset in place\n');
    expect(bodies).toEqual([
      { force: false, timeout_s: 60 },
      { force: true, timeout_s: 5 },
    ]);
  });

  it('--wait follows GET /v1/vms/{vm_id} until the action is done, with progress on stderr', async () => {
    const states = [
      lifeCycle({ operation: 'stopping', desired_state: 'stopped' }),
      null,
      lifeCycle({ state: 'Stopped', desired_state: 'stopped' }),
    ];
    const io = new FakeIo({}, (request) => {
      if (request.method === 'POST') return json(states[0], 202);
      return json({ ...vm('Running'), life_cycle: states.shift() ?? null });
    });
    expect(await run(['vm', 'stop', 'vm-1', '--wait'], io)).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual([
      'POST /v1/vms/vm-1/stop',
      'GET /v1/vms/vm-1',
      'GET /v1/vms/vm-1',
      'GET /v1/vms/vm-1',
    ]);
    expect(io.stderr.text).toBe(
      'vm-1: Running (stopping), 1 s\nvm-1: Running (its agent did not answer), 2 s\n',
    );
    expect(io.stdout.text).toBe(
      'stopping vm-1: ACPI power-down, QEMU ended after 60 s\nvm-1 is Stopped\n',
    );
  });

  it('restart --wait ends once the VM runs with the restart over; Error exits 1; so does the time', async () => {
    const restarts = [lifeCycle({ operation: 'restarting' }), lifeCycle()];
    const restart = new FakeIo({}, (request) =>
      request.method === 'POST'
        ? json(lifeCycle({ operation: 'restarting' }), 202)
        : new URL(request.url).pathname === '/v1/nodes/node-a'
          ? json(NODE)
          : json({ ...vm('Running'), life_cycle: restarts.shift() }),
    );
    restart.portAnswers.push({ kind: 'closed' });
    expect(await run(['vm', 'restart', 'vm-1', '--wait'], restart)).toBe(ExitCode.Ok);
    expect(restart.stdout.text).toContain(
      'vm-1 is Running\nvm-1 answers SSH: ssh -p 22022 debian@10.8.0.2\n',
    );
    expect(restart.stderr.text).toContain(
      'vm-1: Running, waiting for SSH at 10.8.0.2:22022 (connection reset: sshd in the guest is not up yet), ',
    );

    const failing = new FakeIo({}, (request) =>
      request.method === 'POST'
        ? json(lifeCycle({ operation: 'starting', state: 'Stopped' }), 202)
        : json({
            ...vm('Stopped'),
            life_cycle: lifeCycle({
              state: 'Error',
              reason: 'failed 3 times in a row; last: no KVM',
            }),
          }),
    );
    expect(await run(['vm', 'start', 'vm-1', '--wait'], failing)).toBe(ExitCode.Refused);
    expect(failing.stderr.text).toBe(
      'ppn-fleet: vm-1 is Error: failed 3 times in a row; last: no KVM\n',
    );

    const slow = new FakeIo({}, (request) =>
      request.method === 'POST'
        ? json(lifeCycle({ operation: 'starting', state: 'Stopped' }), 202)
        : json({
            ...vm('Stopped'),
            life_cycle: lifeCycle({ operation: 'starting', state: 'Stopped' }),
          }),
    );
    expect(await run(['vm', 'start', 'vm-1', '--wait', '--timeout', '3'], slow)).toBe(
      ExitCode.Refused,
    );
    expect(slow.stderr.text).toContain(
      'ppn-fleet: vm-1 is still Stopped (starting) after 3 s (--wait)',
    );
  });

  it('start --wait gives up on SSH at its timeout, counted from the start; a VM with nothing to reach is done once Running', async () => {
    const fleet = (running: object) => (request: Request) =>
      request.method === 'POST'
        ? json(lifeCycle({ operation: 'starting', state: 'Stopped' }), 202)
        : new URL(request.url).pathname === '/v1/nodes/node-a'
          ? json(NODE)
          : json({ ...running, life_cycle: lifeCycle() });
    const silent = new FakeIo({}, fleet(vm('Running')));
    for (let i = 0; i < 100; i++) silent.portAnswers.push({ kind: 'closed' });
    expect(await run(['vm', 'start', 'vm-1', '--wait', '--timeout', '9'], silent)).toBe(
      ExitCode.Refused,
    );
    expect(silent.stderr.text).toContain(
      'ppn-fleet: vm-1 is Running, but SSH did not answer at 10.8.0.2:22022 within 9 s: connection reset: sshd in the guest is not up yet\n',
    );

    for (const unreachable of [
      { ...vm('Running'), node_silent_since: '2026-08-06T11:59:00.000Z' },
      { ...vm('Running'), host_ports: [] },
    ]) {
      const io = new FakeIo({}, fleet(unreachable));
      expect(await run(['vm', 'start', 'vm-1', '--wait'], io)).toBe(ExitCode.Ok);
      expect(io.stdout.text).toBe('starting vm-1\nvm-1 is Running\n');
      expect(io.probes).toEqual([]);
      expect(sent(io)).toEqual(['POST /v1/vms/vm-1/start', 'GET /v1/vms/vm-1']);
    }
  });

  it("prints the listener's refusal as it is, exit 1; unreachable exits 3", async () => {
    const refused = new FakeIo({}, () => refusal(409, 'vm vm-1 on node node-a is already stopped'));
    expect(await run(['vm', 'stop', 'vm-1'], refused)).toBe(ExitCode.Refused);
    expect(refused.stderr.text).toBe('ppn-fleet: vm vm-1 on node node-a is already stopped\n');
    const down = new FakeIo({}, connectionRefused);
    expect(await run(['vm', 'start', 'vm-1'], down)).toBe(ExitCode.Unreachable);
    expect(down.stderr.text).toContain(
      "cannot reach the controller's operations listener at http://127.0.0.1:9206: ECONNREFUSED",
    );
    // On the controller's host with the listener on its mesh address: where to look.
    const console = new FakeIo({}, connectionRefused);
    expect(await run(['vm', 'console', 'vm-1'], console)).toBe(ExitCode.Unreachable);
    expect(console.stderr.text).toContain(
      'give that address with --ops-endpoint or VM_FLEET_OPS_ENDPOINT',
    );
  });

  it('console prints the end of the console, printable, keeping lines and tabs', async () => {
    const io = new FakeIo({}, () =>
      json({ vm_id: 'vm-1', from: 0, next: 20, text: 'boot\tok\nlogin: ', reset: false }),
    );
    expect(await run(['vm', 'console', 'vm-1'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toBe('boot\tok\nlogin: \n');
    expect(sent(io)).toEqual(['GET /v1/vms/vm-1/console']);

    // The listener makes the text printable: text that is not is an answer it does not give.
    const escaped = new FakeIo({}, () =>
      json({ vm_id: 'vm-1', from: 0, next: 20, text: 'boot\u001b[2J', reset: false }),
    );
    expect(await run(['vm', 'console', 'vm-1'], escaped)).toBe(ExitCode.Refused);
    expect(escaped.stderr.text).toContain('(200: text not as the API gives it)');
    expect(escaped.stdout.text).toBe('');
  });

  it('console --follow reads on from each next, about once a second, until refused', async () => {
    const reads = [
      { vm_id: 'vm-1', from: 0, next: 6, text: 'hello\n', reset: false },
      { vm_id: 'vm-1', from: 6, next: 6, text: '', reset: false },
      { vm_id: 'vm-1', from: 0, next: 4, text: 'new\n', reset: true },
    ];
    const io = new FakeIo({}, () => {
      const read = reads.shift();
      return read ? json(read) : refusal(404, 'vm vm-1 is not listed on any live node');
    });
    expect(await run(['vm', 'console', 'vm-1', '--follow'], io)).toBe(ExitCode.Refused);
    expect(sent(io)).toEqual([
      'GET /v1/vms/vm-1/console',
      'GET /v1/vms/vm-1/console?from=6',
      'GET /v1/vms/vm-1/console?from=6',
      'GET /v1/vms/vm-1/console?from=4',
    ]);
    expect(io.now()).toBe(3_000);
    expect(io.stdout.text).toBe('hello\nnew\n');
    expect(io.stderr.text).toBe(
      '--- vm-1: the console began again ---\nppn-fleet: vm vm-1 is not listed on any live node\n',
    );
  });
});

describe('ppn-fleet vm backup and vm copies', () => {
  const full = {
    backup_id: '20260806T110000Z-3f2a/0000',
    kind: 'full',
    taken_at: '2026-08-06T11:00:00.000Z',
    size_bytes: 1_503_238_553,
    path: '/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0000-full.qcow2',
  };
  const incremental = {
    ...full,
    backup_id: '20260806T110000Z-3f2a/0001',
    kind: 'incremental',
    taken_at: '2026-08-06T11:58:00.000Z',
    size_bytes: 3_355_443,
    path: '/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0001-incremental.qcow2',
  };
  const backups = (list: object[], fields: object = {}) => ({
    vm_id: 'vm-1',
    node_id: 'node-a',
    backups: list,
    in_progress_since: null,
    last_error: null,
    ...fields,
  });

  const copiesOf = (list: object[], fields: object = {}) => ({
    vm_id: 'vm-1',
    node_id: 'node-a',
    policy: { count: 1, every_s: 60 },
    copied_at: '2026-08-06T11:59:30.000Z',
    copy_node_id: 'node-b',
    copies: [
      {
        vm_id: 'vm-1',
        node_id: 'node-b',
        source_node_id: 'node-a',
        copied_at: '2026-08-06T11:59:30.000Z',
        size_bytes: 3_355_443,
      },
    ],
    backups: { vm_id: 'vm-1', backups: list, in_progress_since: null, last_error: null },
    backups_unread: null,
    ...fields,
  });

  it('copies lists the policy, every copy on another node and every backup, newest first: where, when, size, full or incremental', async () => {
    const io = new FakeIo({}, () =>
      json(
        copiesOf([], {
          backups: backups([incremental, full], { last_error: 'disk full' }),
        }),
      ),
    );
    expect(await run(['vm', 'copies', 'vm-1'], io)).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual(['GET /v1/vms/vm-1/copies']);
    expect(io.stdout.text.split('\n')).toEqual([
      'vm-1 on node node-a: copies: 1 on other nodes, every 60 s',
      'COPY ON  KIND  TAKEN                      AGE     SIZE  SENT BY',
      'node-b   copy  2026-08-06T11:59:30.000Z  30 s  3.2 MiB  node-a',
      '',
      'BACKUP                      KIND         TAKEN                        AGE     SIZE  WHERE',
      '20260806T110000Z-3f2a/0001  incremental  2026-08-06T11:58:00.000Z   2 min  3.2 MiB  node-a:/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0001-incremental.qcow2',
      '20260806T110000Z-3f2a/0000  full         2026-08-06T11:00:00.000Z  60 min  1.4 GiB  node-a:/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0000-full.qcow2',
      'the last backup failed: disk full',
      '',
    ]);
  });

  it('copies says when there is no backup, a backup under way, and backups it could not read', async () => {
    const io = new FakeIo({}, () =>
      json(
        copiesOf([], { backups: backups([], { in_progress_since: '2026-08-06T11:59:30.000Z' }) }),
      ),
    );
    expect(await run(['vm', 'copies', 'vm-1'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toContain(
      'vm-1 has no backup on node node-a\na backup is under way since 2026-08-06T11:59:30.000Z (30 s ago)\n',
    );
    const unread = new FakeIo({}, () =>
      json(copiesOf([], { copies: [], backups: null, backups_unread: 'node node-a is silent' })),
    );
    expect(await run(['vm', 'copies', 'vm-1'], unread)).toBe(ExitCode.Ok);
    expect(unread.stdout.text).toContain('vm-1 has no copy on another node\n');
    expect(unread.stdout.text).toContain(
      'backups on node node-a not read: node node-a is silent\n',
    );
    // An answer not of the listener's shape is refused, not printed as undefined.
    const odd = new FakeIo({}, () => json({ vm_id: 'vm-1', node_id: 'node-a', copies: 'all' }));
    expect(await run(['vm', 'copies', 'vm-1'], odd)).toBe(ExitCode.Refused);
  });

  it('backup asks the listener and, with --wait, follows it until taken', async () => {
    const answers = [
      backups([full], { in_progress_since: '2026-08-06T12:00:00.000Z' }),
      backups([full], { in_progress_since: '2026-08-06T12:00:00.000Z' }),
      backups([incremental, full]),
    ];
    const io = new FakeIo({}, () => json(answers.shift()));
    expect(await run(['vm', 'backup', 'vm-1', '--wait'], io)).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual([
      'POST /v1/vms/vm-1/backups',
      'GET /v1/vms/vm-1/backups',
      'GET /v1/vms/vm-1/backups',
    ]);
    // A write without a body still says JSON: the listener refuses a simple request.
    expect(io.requests[0].headers.get('content-type')).toBe('application/json');
    expect(io.stdout.text).toBe(
      'backing up vm-1 on node node-a to its VM_BACKUP_DIR\nvm-1: incremental backup 20260806T110000Z-3f2a/0001 taken, 3.2 MiB: node-a:/mnt/usb/vm-backups/vm-1/20260806T110000Z-3f2a/0001-incremental.qcow2\n',
    );
  });

  it('backup --wait exits 1 with why the backup failed; a refusal is printed as it is', async () => {
    const answers = [
      backups([full], { in_progress_since: '2026-08-06T12:00:00.000Z' }),
      backups([full], {
        last_error: 'vm vm-1 is Error; only a Running or Stopped VM is backed up',
      }),
    ];
    const failed = new FakeIo({}, () => json(answers.shift()));
    expect(await run(['vm', 'backup', 'vm-1', '--wait'], failed)).toBe(ExitCode.Refused);
    expect(failed.stderr.text).toContain(
      'ppn-fleet: vm-1: the backup failed: vm vm-1 is Error; only a Running or Stopped VM is backed up',
    );
    const off = new FakeIo({}, () =>
      refusal(409, "node node-a keeps no backups (its agent's VM_BACKUP_DIR is not set)"),
    );
    expect(await run(['vm', 'backup', 'vm-1'], off)).toBe(ExitCode.Refused);
    expect(off.stderr.text).toBe(
      "ppn-fleet: node node-a keeps no backups (its agent's VM_BACKUP_DIR is not set)\n",
    );
  });
});

describe('ppn-fleet vm restore', () => {
  const restored = (vmId: string, replaced: string | null) => ({
    vm: {
      ...vm('Provisioning'),
      vm_id: vmId,
      host_ports: [
        { host_port: 22022, guest_port: 22, protocol: 'tcp' },
        { host_port: 48080, guest_port: 80, protocol: 'tcp' },
      ],
    },
    point: {
      source: 'backup',
      backup_id: '20260806T110000Z-3f2a/0001',
      kind: 'incremental',
      taken_at: '2026-08-06T11:58:00.000Z',
      size_bytes: 3_355_443,
    },
    replaced_node_id: replaced,
  });

  it('asks the listener with the flags given, and prints where the VM runs now and its ports', async () => {
    const io = new FakeIo({}, (request) =>
      json(request.url.endsWith('/restore') ? restored('vm-1', 'node-b') : NODE),
    );
    expect(
      await run(
        [
          'vm',
          'restore',
          'vm-1',
          '--from',
          '20260806T110000Z-3f2a/0001',
          '--to',
          'node-a',
          '--at',
          '2026-08-06T12:00:00Z',
        ],
        io,
      ),
    ).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual([
      'POST /v1/vms/vm-1/restore',
      'GET http://127.0.0.1:9203/v1/nodes/node-a',
    ]);
    expect(await io.requests[0].json()).toEqual({
      from: '20260806T110000Z-3f2a/0001',
      at: '2026-08-06T12:00:00Z',
      to: 'node-a',
      as_new: false,
    });
    expect(io.stdout.text.split('\n')).toEqual([
      'vm-1 restored on node node-a from backup 20260806T110000Z-3f2a/0001 taken 2026-08-06T11:58:00.000Z; starting',
      'ports: 10.8.0.2:22022 → 22/tcp, 10.8.0.2:48080 → 80/tcp',
      'node node-b will not run it again: if it comes back, its agent stops its old copy and sets its disk aside',
      '',
    ]);
  });

  it('--as-new names the new VM; a refusal is printed as the listener said it, exit 1', async () => {
    const io = new FakeIo({}, (request) =>
      json(request.url.endsWith('/restore') ? restored('vm-2', null) : NODE),
    );
    expect(await run(['vm', 'restore', 'vm-1', '--as-new'], io)).toBe(ExitCode.Ok);
    expect(await io.requests[0].json()).toEqual({ as_new: true });
    expect(io.stdout.text.split('\n')[0]).toBe(
      'vm-2 (a new VM from vm-1) restored on node node-a from backup 20260806T110000Z-3f2a/0001 taken 2026-08-06T11:58:00.000Z; starting',
    );
    const refused = new FakeIo({}, () =>
      refusal(
        409,
        'vm vm-1 still runs on node node-a (its live agent lists it): delete it there first, or restore it as a new VM beside it (as_new)',
      ),
    );
    expect(await run(['vm', 'restore', 'vm-1'], refused)).toBe(ExitCode.Refused);
    expect(refused.stderr.text).toContain('ppn-fleet: vm vm-1 still runs on node node-a');
  });

  it('refuses a bad --at or --to before sending anything (exit 2)', async () => {
    const io = new FakeIo({}, () => json({}));
    expect(await run(['vm', 'restore', 'vm-1', '--at', 'yesterday'], io)).toBe(ExitCode.Usage);
    expect(await run(['vm', 'restore', 'vm-1', '--to', '-x'], io)).toBe(ExitCode.Usage);
    expect(io.requests).toEqual([]);
  });
});

describe('ppn-fleet vm move', () => {
  const moved = (mode: 'live' | 'cold', state: string) => ({
    vm: {
      ...vm(state),
      host_ports: [
        { host_port: 22022, guest_port: 22, protocol: 'tcp' },
        { host_port: 48080, guest_port: 80, protocol: 'tcp' },
      ],
    },
    from_node_id: 'node-b',
    mode,
    pause_ms: mode === 'live' ? 271 : null,
    total_ms: 11_900,
    bytes_sent: 509_700_000,
  });

  it('asks the listener for the node given, and prints how it moved and its ports there', async () => {
    const io = new FakeIo({}, (request) =>
      json(request.url.endsWith('/move') ? moved('live', 'Running') : NODE),
    );
    expect(await run(['vm', 'move', 'vm-1', '--to', 'node-a'], io)).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual([
      'POST /v1/vms/vm-1/move',
      'GET http://127.0.0.1:9203/v1/nodes/node-a',
    ]);
    expect(await io.requests[0].json()).toEqual({ to: 'node-a' });
    expect(io.stdout.text.split('\n')).toEqual([
      'vm-1 moved live (guest paused 271 ms) from node node-b to node node-a in 11.9 s, 486.1 MiB sent',
      'ports: 10.8.0.2:22022 → 22/tcp, 10.8.0.2:48080 → 80/tcp',
      'node node-b no longer has its disk',
      '',
    ]);
  });

  it('without --to lets placement choose; a stopped VM moves cold; a refusal exits 1', async () => {
    const io = new FakeIo({}, (request) =>
      json(request.url.endsWith('/move') ? moved('cold', 'Stopped') : NODE),
    );
    expect(await run(['vm', 'move', 'vm-1'], io)).toBe(ExitCode.Ok);
    expect(await io.requests[0].json()).toEqual({});
    expect(io.stdout.text.split('\n')[0]).toBe(
      'vm-1 moved cold (left stopped) from node node-b to node node-a in 11.9 s, 486.1 MiB sent',
    );
    const refused = new FakeIo({}, () =>
      refusal(
        422,
        "node node-b refused the move: machine: this node's QEMU has no machine type pc-q35-9.1",
      ),
    );
    expect(await run(['vm', 'move', 'vm-1'], refused)).toBe(ExitCode.Refused);
    expect(refused.stderr.text).toContain('ppn-fleet: node node-b refused the move: machine');
  });

  it('refuses a bad vm_id or --to before sending anything (exit 2)', async () => {
    const io = new FakeIo({}, () => json({}));
    expect(await run(['vm', 'move', 'vm-1', '--to', '-x'], io)).toBe(ExitCode.Usage);
    expect(await run(['vm', 'move', '../etc'], io)).toBe(ExitCode.Usage);
    expect(io.requests).toEqual([]);
  });
});

describe('ppn-fleet vms with the operations listener', () => {
  const withLifeCycle = (state: string, life_cycle: object | null) => ({
    ...vm(state),
    life_cycle,
  });

  it('shows the desired state where it differs, from the operations listener', async () => {
    const io = new FakeIo({}, (request) => {
      const url = new URL(request.url);
      if (url.port === '9206') {
        return json([
          withLifeCycle(
            'Stopped',
            lifeCycle({ state: 'Stopped', next_start_at: '2026-08-06T12:00:40.000Z' }),
          ),
        ]);
      }
      return fleetOfOne(request);
    });
    expect(await run(['vms'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toContain('Stopped (restarting in 40 s)');
  });

  it("falls back to the API's listing when the operations listener does not answer", async () => {
    const io = new FakeIo({}, (request) =>
      new URL(request.url).port === '9206' ? connectionRefused() : fleetOfOne(request),
    );
    expect(await run(['vms'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toContain('Running');
    expect(io.stderr.text).toBe('');

    const refusing = new FakeIo({}, (request) =>
      new URL(request.url).port === '9206'
        ? refusal(401, 'a token is needed')
        : fleetOfOne(request),
    );
    expect(await run(['vms'], refusing)).toBe(ExitCode.Ok);
    expect(refusing.stdout.text).toContain('vm-1');
    expect(refusing.stderr.text).toContain("showing the API's listing, without desired states");
  });

  it('asks the default operations listener only beside an API on this machine, a given one always', async () => {
    const hosts = (io: FakeIo) => io.requests.map((request) => new URL(request.url).host);
    const remote = new FakeIo({}, fleetOfOne);
    expect(await run(['vms', '--endpoint', 'http://10.8.0.1:9203'], remote)).toBe(ExitCode.Ok);
    expect(hosts(remote)).toEqual(['10.8.0.1:9203', '10.8.0.1:9203']);

    const given = new FakeIo({ VM_FLEET_OPS_ENDPOINT: 'http://10.8.0.1:9206' }, fleetOfOne);
    expect(await run(['vms', '--endpoint', 'http://10.8.0.1:9203'], given)).toBe(ExitCode.Ok);
    expect(hosts(given)).toEqual(['10.8.0.1:9206', '10.8.0.1:9203']);
  });

  it('--json prints the API listing, as it always has, without asking the operations listener', async () => {
    const io = new FakeIo({}, fleetOfOne);
    expect(await run(['vms', '--json'], io)).toBe(ExitCode.Ok);
    expect(io.requests.map((request) => request.url)).toEqual(['http://127.0.0.1:9203/v1/vms']);
  });
});

describe('ppn-fleet status with the operations listener', () => {
  const diskRoom = {
    room_mb: 40_960,
    committed_mb: 28_672,
    committable_mb: 12_288,
    reserve_mb: 2_048,
    overcommit: 1,
  };

  it("shows each node's disk room in a DISK column, from the operations listener", async () => {
    const io = new FakeIo({}, (request) =>
      new URL(request.url).port === '9206'
        ? json([{ node_id: 'node-a', disk_room: diskRoom }])
        : fleetOfOne(request),
    );
    expect(await run(['status'], io)).toBe(ExitCode.Ok);
    expect(io.stdout.text).toMatch(/ DISK /);
    expect(io.stdout.text).toContain('12.0 / 40.0 GiB');
    expect(io.requests.map((request) => request.url)).toContain(
      'http://127.0.0.1:9206/v1/node-disks',
    );
    expect(io.stderr.text).toBe('');
  });

  it('says nothing extra when the listener does not answer, is not there, or answers what it does not give', async () => {
    for (const listener of [
      connectionRefused,
      () => refusal(404, 'Cannot GET /v1/node-disks'),
      () => json([{ node_id: 'node-a', disk_room: { room_mb: 'lots' } }]),
    ]) {
      const io = new FakeIo({}, (request) =>
        new URL(request.url).port === '9206' ? listener() : fleetOfOne(request),
      );
      expect(await run(['status'], io)).toBe(ExitCode.Ok);
      expect(io.stdout.text).toContain('node-a');
      expect(io.stdout.text).not.toContain('DISK');
      expect(io.stderr.text).toBe('');
    }
  });

  it('asks no default listener beside a remote API', async () => {
    const io = new FakeIo({}, fleetOfOne);
    expect(await run(['status', '--endpoint', 'http://10.8.0.1:9203'], io)).toBe(ExitCode.Ok);
    expect(io.requests.map((request) => new URL(request.url).host)).toEqual([
      '10.8.0.1:9203',
      '10.8.0.1:9203',
    ]);
  });
});

describe('ppn-fleet node declare-dead (the operations listener)', () => {
  it('marks the node and says which VMs the leader recovers; a node still renewing is refused, exit 1', async () => {
    const io = new FakeIo({}, () =>
      json(
        {
          node_id: 'node-a',
          last_renewed_at: '2026-08-06T11:58:00.000Z',
          protected_vm_ids: ['vm-1'],
        },
        202,
      ),
    );
    expect(await run(['node', 'declare-dead', 'node-a'], io)).toBe(ExitCode.Ok);
    expect(sent(io)).toEqual(['POST /v1/nodes/node-a/declare-dead']);
    expect(io.stdout.text).toBe(
      'node-a declared dead (lease last renewed 2026-08-06T11:58:00.000Z): the leader recovers vm-1 from their copies at its next pass\n',
    );
    const refused = new FakeIo({}, () =>
      refusal(
        409,
        'node node-a still renews its lease (last renewed 2026-08-06T12:00:00.000Z, 40 s left)',
      ),
    );
    expect(await run(['node', 'declare-dead', 'node-a'], refused)).toBe(ExitCode.Refused);
    expect(refused.stderr.text).toContain('ppn-fleet: node node-a still renews its lease');
    // `node <node_id>` still shows the node.
    const shown = new FakeIo({}, fleetOfOne);
    expect(await run(['node', 'node-a'], shown)).toBe(ExitCode.Ok);
    expect(shown.stdout.text).toContain('WireGuard IP:    10.8.0.2');
  });
});
