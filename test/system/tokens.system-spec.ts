import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  eventually,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The tokens with real processes: the built controller on 9203 and a built agent sharing its
 * node token enroll and place a real QEMU VM (TCG, 64 MB, on the blank base image the agent
 * makes), with the tokens given directly and as files; neither daemon ever prints one.
 */
jest.setTimeout(30_000);

const NODE_TOKEN = 'node-token-c4e1a9f3b7d25086';
const API_TOKEN = 'api-token-7b3d0e8a2f6c1945';
const WRONG_TOKEN = 'not-a-token-of-this-fleet';
const SHORT_TOKEN = 'tenchars10';

// Its QEMU processes are killed and it is removed after the file, also when a test fails.
const workDir = scratchFolder('tokens-');

/** The live QEMU processes the agents of this suite started. */
function qemuPids(): number[] {
  return liveQemusUnder(workDir).map(({ pid }) => pid);
}

function secretFile(name: string, content: string): string {
  const path = join(workDir, name);
  writeFileSync(path, `${content}\n`, { mode: 0o600 });
  return path;
}

interface Listed {
  vm_id: string;
  node_id: string;
  state: string;
}

/** One request, answered with its status, JSON body and WWW-Authenticate challenge. */
async function call<T = { message: string; vm_id: string }>(
  url: string,
  token?: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: T; challenge: string | null }> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text ? JSON.parse(text) : undefined) as T,
    challenge: response.headers.get('www-authenticate'),
  };
}

const variants = [
  {
    given: 'in the environment',
    wgIp: '127.0.0.2',
    fleetEnv: () => ({ VM_FLEET_NODE_TOKEN: NODE_TOKEN, VM_FLEET_API_TOKEN: API_TOKEN }),
    agentEnv: () => ({ VM_FLEET_NODE_TOKEN: NODE_TOKEN }),
  },
  {
    given: 'as files (systemd credentials)',
    wgIp: '127.0.0.3',
    fleetEnv: () => ({
      VM_FLEET_NODE_TOKEN_FILE: secretFile('fleet-node-token', NODE_TOKEN),
      VM_FLEET_API_TOKEN_FILE: secretFile('fleet-api-token', API_TOKEN),
    }),
    agentEnv: () => ({ VM_FLEET_NODE_TOKEN_FILE: secretFile('agent-node-token', NODE_TOKEN) }),
  },
];

describe.each(variants)('tokens given $given', ({ wgIp, fleetEnv, agentEnv }) => {
  const nodeId = `tokens-node-${wgIp.split('.')[3]}`;
  const agentUrl = `http://${wgIp}:9204`;
  let fleet: Daemon;
  let agent: Daemon;

  beforeAll(async () => {
    fleet = startFleetDaemon(fleetEnv());
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    agent = startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: nodeId,
      VM_WG_IP: wgIp,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: join(workDir, nodeId),
      ...agentEnv(),
    });
  });

  afterAll(() => stopAllDaemons());

  it('enrolls the agent by its heartbeats; operators see it with the API token only', async () => {
    await eventually(
      `${nodeId} listed`,
      async () => {
        const nodes = await call<Listed[]>(`${FLEET_URL}/v1/nodes`, API_TOKEN);
        return nodes.body.some((node) => node.node_id === nodeId) ? true : undefined;
      },
      5_000,
    );
    for (const token of [undefined, WRONG_TOKEN, NODE_TOKEN]) {
      const refused = await call(`${FLEET_URL}/v1/nodes`, token);
      expect(refused.status).toBe(401);
      expect(refused.challenge).toMatch(/^Bearer realm="service-vm-fleet"/);
      expect(refused.body.message).toContain('VM_FLEET_API_TOKEN');
    }
    expect((await fetch(`${FLEET_URL}/docs/`)).status).toBe(200);
  });

  it('places a real VM through the controller, which the agent lets in by the node token only', async () => {
    const created = await call(`${FLEET_URL}/v1/vms`, API_TOKEN, {
      method: 'POST',
      body: { vm_type: 'tokens', ram_mb: 64, vcpu_count: 1, preferred_node: nodeId },
    });
    expect(created.status).toBe(201);
    const vmId: string = created.body.vm_id;
    await eventually(
      `${vmId} Running`,
      async () => {
        const vms = await call<Listed[]>(`${FLEET_URL}/v1/vms`, API_TOKEN);
        return vms.body.find((vm) => vm.vm_id === vmId)?.state === 'Running' ? true : undefined;
      },
      5_000,
    );
    expect(qemuPids()).toHaveLength(1);
    const [pid] = qemuPids();

    for (const token of [undefined, WRONG_TOKEN, API_TOKEN]) {
      const refused = await call(`${agentUrl}/v1/vms`, token);
      expect(refused.status).toBe(401);
      expect(refused.challenge).toMatch(/^Bearer realm="service-vm-host"/);
      const destroy = await call(`${agentUrl}/v1/vms/${vmId}`, token, { method: 'DELETE' });
      expect(destroy.status).toBe(401);
    }
    const onAgent = await call<Listed[]>(`${agentUrl}/v1/vms`, NODE_TOKEN);
    expect(onAgent.body.map((vm) => vm.vm_id)).toEqual([vmId]);
    expect(qemuPids()).toContain(pid);

    expect(
      (await call(`${FLEET_URL}/v1/vms/${vmId}`, API_TOKEN, { method: 'DELETE' })).status,
    ).toBe(204);
    await eventually(
      'QEMU gone',
      () => Promise.resolve(qemuPids().includes(pid) ? undefined : true),
      5_000,
    );
  });

  it('never prints a token, and warns of no open API', async () => {
    await Promise.all([fleet.stop(), agent.stop()]);
    for (const daemon of [fleet, agent]) {
      for (const token of [NODE_TOKEN, API_TOKEN, WRONG_TOKEN]) {
        expect(daemon.output).not.toContain(token);
      }
      expect(daemon.output).not.toContain('API open');
    }
    // What they did print: a whole VM's life.
    expect(agent.output).toMatch(/vm vm-[0-9a-f]+ destroyed/);
  });
});

describe('start-up', () => {
  afterAll(() => stopAllDaemons());

  const agentBase = {
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: 'tokens-refused',
    VM_WG_IP: '127.0.0.4',
    VM_DISK_DIR: join(workDir, 'tokens-refused'),
  };

  it.each([
    ['service-vm-fleet', 'VM_FLEET_API_TOKEN', () => ({ VM_FLEET_API_TOKEN: SHORT_TOKEN })],
    ['service-vm-fleet', 'VM_FLEET_NODE_TOKEN', () => ({ VM_FLEET_NODE_TOKEN: SHORT_TOKEN })],
    [
      'service-vm-fleet',
      'VM_FLEET_NODE_TOKEN_FILE',
      () => ({ VM_FLEET_NODE_TOKEN_FILE: secretFile('short-fleet', SHORT_TOKEN) }),
    ],
    [
      'service-vm-host',
      'VM_FLEET_NODE_TOKEN',
      () => ({ ...agentBase, VM_FLEET_NODE_TOKEN: SHORT_TOKEN }),
    ],
    [
      'service-vm-host',
      'VM_FLEET_NODE_TOKEN_FILE',
      () => ({
        ...agentBase,
        VM_FLEET_NODE_TOKEN_FILE: secretFile('short-agent', SHORT_TOKEN),
      }),
    ],
  ])(
    '%s with a 10-character token in %s exits 2, naming the variable, not the value',
    async (program, variable, env) => {
      const daemon = program === 'service-vm-fleet' ? startFleetDaemon(env()) : startAgent(env());
      expect(await daemon.waitForExit()).toEqual({ code: 2, signal: null });
      expect(daemon.output).toContain(`${program}: configuration error: `);
      expect(daemon.output).toContain(variable);
      expect(daemon.output).not.toContain(SHORT_TOKEN);
    },
  );

  it('refuses a token given both directly and as a file, and a file it cannot read', async () => {
    const both = startAgent({
      ...agentBase,
      VM_FLEET_NODE_TOKEN: NODE_TOKEN,
      VM_FLEET_NODE_TOKEN_FILE: secretFile('both', NODE_TOKEN),
    });
    expect((await both.waitForExit()).code).toBe(2);
    expect(both.output).toContain('set VM_FLEET_NODE_TOKEN or VM_FLEET_NODE_TOKEN_FILE, not both');
    expect(both.output).not.toContain(NODE_TOKEN);

    const missing = startFleetDaemon({ VM_FLEET_API_TOKEN_FILE: join(workDir, 'no-such-file') });
    expect((await missing.waitForExit()).code).toBe(2);
    expect(missing.output).toContain(
      'VM_FLEET_API_TOKEN_FILE names a file that cannot be used: cannot read it (ENOENT)',
    );
  });

  it('refuses a token file group or others can read, as ssh does a key, naming the mode', async () => {
    const readable = (name: string): string => {
      const path = secretFile(name, NODE_TOKEN);
      chmodSync(path, 0o644);
      return path;
    };
    const fleet = startFleetDaemon({ VM_FLEET_API_TOKEN_FILE: readable('readable-api') });
    const agent = startAgent({ ...agentBase, VM_FLEET_NODE_TOKEN_FILE: readable('readable-node') });
    for (const [daemon, variable] of [
      [fleet, 'VM_FLEET_API_TOKEN_FILE'],
      [agent, 'VM_FLEET_NODE_TOKEN_FILE'],
    ] as const) {
      expect(await daemon.waitForExit()).toEqual({ code: 2, signal: null });
      expect(daemon.output).toContain(
        `${variable} names a file that cannot be used: it is readable by group or others (mode 0644); chmod 600 it`,
      );
      expect(daemon.output).not.toContain(NODE_TOKEN);
    }
  });

  it('without any token, each daemon logs one warning line saying its API is open', async () => {
    const fleet = startFleetDaemon();
    await fleet.waitForOutput(/API open/);
    const agent = startAgent({ ...agentBase, VM_HEARTBEAT_INTERVAL_S: '1' });
    await agent.waitForOutput(/API open/);
    await Promise.all([fleet.stop(), agent.stop()]);
    const warnings = (daemon: Daemon) =>
      daemon.output.split('\n').filter((line) => line.includes('API open'));
    expect(warnings(fleet)).toEqual([
      expect.stringMatching(/WARN .*VM_FLEET_NODE_TOKEN.*VM_FLEET_API_TOKEN/),
    ]);
    expect(warnings(agent)).toEqual([
      expect.stringMatching(/WARN .*node tokens-refused: .*VM_FLEET_NODE_TOKEN/),
    ]);
    expect(warnings(agent)[0]).not.toContain('VM_FLEET_API_TOKEN');
  });
});
