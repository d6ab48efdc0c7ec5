import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CreateVmRequest, HeartbeatVm, NodeHeartbeat, VmRecord } from '@app/fleet-domain';
import { spawnKeyOf as spawnKeyFor } from '../../apps/fleet/src/vms/spawn-key';
import {
  Daemon,
  FLEET_MAIN,
  FLEET_URL,
  ListedNode,
  eventually,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { EtcdServer } from '../support/etcd-server';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { freePort } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';
import { StubAgent, json, spawnKeyOf, spawnedVm } from '../support/stub-agent';

jest.setTimeout(120_000);

/** POSTs a heartbeat of `nodeId` to `base`: its status and message. */
async function beat(
  base: string,
  nodeId: string,
  extra: Partial<NodeHeartbeat> = {},
): Promise<{ status: number; message?: string }> {
  const response = await fetch(`${base}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(heartbeat({ ...extra, node_id: nodeId })),
  });
  return {
    status: response.status,
    message: ((await response.json()) as { message?: string }).message,
  };
}

async function nodesOn(base: string): Promise<ListedNode[]> {
  return (await fetch(`${base}/v1/nodes`)).json() as Promise<ListedNode[]>;
}

describe('a controller on etcd', () => {
  it('refuses to start while no etcd endpoint answers, naming the variable (exit 2)', async () => {
    const nobody = await freePort();
    const fleet = startFleetDaemon({ VM_FLEET_ETCD_ENDPOINTS: `http://127.0.0.1:${nobody}` });
    expect(await fleet.waitForExit(20_000)).toEqual({ code: 2, signal: null });
    expect(fleet.output).toContain(
      `service-vm-fleet: configuration error: VM_FLEET_ETCD_ENDPOINTS: fleet state store (etcd at http://127.0.0.1:${nobody}) unavailable: no endpoint answered (last: http://127.0.0.1:${nobody}: ECONNREFUSED); the controller does not start without its store`,
    );
  });

  it('answers 503 naming etcd while it is down (heartbeats too), and has lost nothing once it is back', async () => {
    const etcd = await EtcdServer.start();
    // The first endpoint answers nothing: the controller goes on to the next one.
    const dead = `http://127.0.0.1:${await freePort()}`;
    const endpoints = `${dead},${etcd.endpoint}`;
    const fleet = startFleetDaemon({ VM_FLEET_ETCD_ENDPOINTS: endpoints });
    await fleet.waitForOutput(
      new RegExp(`listening on 0\\.0\\.0\\.0:9203 \\(state shared in etcd at ${endpoints}`),
    );
    expect((await beat(FLEET_URL, 'n1')).status).toBe(200);
    expect((await nodesOn(FLEET_URL)).map((node) => node.node_id)).toEqual(['n1']);

    await etcd.stop();
    const down = new RegExp(
      `^fleet state store \\(etcd at ${endpoints}\\) unavailable: no endpoint answered \\(last: .*ECONNREFUSED\\)$`,
    );
    const listing = await fetch(`${FLEET_URL}/v1/nodes`);
    expect(listing.status).toBe(503);
    expect(((await listing.json()) as { message: string }).message).toMatch(down);
    const refused = await beat(FLEET_URL, 'n1');
    expect(refused.status).toBe(503);
    expect(refused.message).toMatch(down);
    await fleet.waitForOutput(/WARN \[etcd\] etcd at .* lost \(.*\); state routes answer 503/);

    await etcd.start();
    expect(
      await eventually(
        'n1 listed again',
        async () => {
          const response = await fetch(`${FLEET_URL}/v1/nodes`);
          if (response.status !== 200) return undefined;
          return ((await response.json()) as ListedNode[]).map((node) => node.node_id);
        },
        10_000,
      ),
    ).toEqual(['n1']);
    await fleet.waitForOutput(/\[etcd\] etcd at .* restored: fleet state is shared/);
    expect((await beat(FLEET_URL, 'n1')).status).toBe(200);
    expect(await fleet.stop()).toEqual({ code: 0, signal: null });
    await etcd.stop();
  });
});

describe('a controller on an etcd whose --max-txn-ops is low', () => {
  it('answers 503 naming that setting for a heartbeat gaining more VM ids than one change may write', async () => {
    const etcd = await EtcdServer.start([], { settings: ['--max-txn-ops', '8'] });
    const fleet = startFleetDaemon({ VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    const vms = (count: number) =>
      Array.from({ length: count }, (_, index) => vmRecord(`vm-${index}`, { ram_alloc_mb: 64 }));
    expect((await beat(FLEET_URL, 'small', { vms: vms(4) })).status).toBe(200);
    expect(
      await beat(FLEET_URL, 'big', {
        vms: vms(12).map((vm) => ({ ...vm, vm_id: `big-${vm.vm_id}` })),
      }),
    ).toEqual({
      status: 503,
      message: `fleet state store (etcd at ${etcd.endpoint}) unavailable: a change needs more operations than etcd's --max-txn-ops allows (a node gaining or losing that many VM ids at once): raise it`,
    });
    await fleet.stop();
    await etcd.stop();
  });
});

describe('a controller on an etcd with auth', () => {
  const password = 'fleet-etcd-password-0123';
  let etcd: EtcdServer;
  let folder: string;

  const passwordFile = (name: string, text: string): string => {
    const path = join(folder, name);
    writeFileSync(path, `${text}\n`, { mode: 0o600 });
    return path;
  };

  beforeAll(async () => {
    folder = scratchFolder('etcd-auth-');
    etcd = await EtcdServer.start();
    await etcd.enableAuth('fleet', password);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await etcd?.stop();
  });

  it('authenticates with VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD_FILE', async () => {
    const fleet = startFleetDaemon({
      VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint,
      VM_FLEET_ETCD_USERNAME: 'fleet',
      VM_FLEET_ETCD_PASSWORD_FILE: passwordFile('right', password),
    });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd/);
    expect((await beat(FLEET_URL, 'n1')).status).toBe(200);
    expect((await nodesOn(FLEET_URL)).map((node) => node.node_id)).toEqual(['n1']);
    expect(await fleet.stop()).toEqual({ code: 0, signal: null });
    expect(fleet.output).not.toContain(password);
  });

  it.each([
    [
      'a wrong password',
      { VM_FLEET_ETCD_USERNAME: 'fleet', VM_FLEET_ETCD_PASSWORD: 'not-the-password' },
      'etcd refused the credentials: check VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD_FILE',
    ],
    [
      'no credentials',
      {},
      'etcd requires credentials: set VM_FLEET_ETCD_USERNAME and VM_FLEET_ETCD_PASSWORD_FILE',
    ],
  ])('refuses to start with %s, saying so', async (_name, credentials, reason) => {
    const fleet = startFleetDaemon({ VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint, ...credentials });
    expect(await fleet.waitForExit(20_000)).toEqual({ code: 2, signal: null });
    expect(fleet.output).toContain(
      `service-vm-fleet: configuration error: VM_FLEET_ETCD_ENDPOINTS: fleet state store (etcd at ${etcd.endpoint}) unavailable: ${reason}`,
    );
    expect(fleet.output).not.toContain('not-the-password');
  });
});

describe('a controller on an etcd with TLS and client certificates', () => {
  let etcd: EtcdServer;

  beforeAll(async () => {
    etcd = await EtcdServer.start([], { tls: true });
  });

  afterAll(async () => {
    await stopAllDaemons();
    await etcd?.stop();
  });

  it('reaches it with VM_FLEET_ETCD_CA_FILE, VM_FLEET_ETCD_CERT_FILE and VM_FLEET_ETCD_KEY_FILE', async () => {
    const fleet = startFleetDaemon({
      VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint,
      VM_FLEET_ETCD_CA_FILE: etcd.tls!.ca,
      VM_FLEET_ETCD_CERT_FILE: etcd.tls!.clientCert,
      VM_FLEET_ETCD_KEY_FILE: etcd.tls!.clientKey,
    });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd at https:/);
    expect((await beat(FLEET_URL, 'n1')).status).toBe(200);
    expect((await nodesOn(FLEET_URL)).map((node) => node.node_id)).toEqual(['n1']);
    expect(await fleet.stop()).toEqual({ code: 0, signal: null });
  });

  it('refuses to start when it cannot trust etcd, or etcd takes no certificate of it, saying which', async () => {
    const untrusted = startFleetDaemon({
      VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint,
      VM_FLEET_ETCD_CERT_FILE: etcd.tls!.clientCert,
      VM_FLEET_ETCD_KEY_FILE: etcd.tls!.clientKey,
    });
    expect(await untrusted.waitForExit(20_000)).toEqual({ code: 2, signal: null });
    expect(untrusted.output).toMatch(
      /configuration error: VM_FLEET_ETCD_ENDPOINTS: .* unavailable: no endpoint answered \(last: https:\/\/127\.0\.0\.1:\d+: [A-Z_]+: its certificate is not trusted \(VM_FLEET_ETCD_CA_FILE names the CA that signed it\)\)/,
    );
    const anonymous = startFleetDaemon({
      VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint,
      VM_FLEET_ETCD_CA_FILE: etcd.tls!.ca,
    });
    expect(await anonymous.waitForExit(20_000)).toEqual({ code: 2, signal: null });
    expect(anonymous.output).toMatch(
      /configuration error: VM_FLEET_ETCD_ENDPOINTS: .* unavailable: no endpoint answered/,
    );
  });
});

const PAIRS = 30;
const PAIRS_AT_ONCE = 10;
const SPAWN_MS = 100;
const request: CreateVmRequest = { vm_type: 'web', ram_mb: 512, vcpu_count: 1, prefer_kvm: false };

/**
 * Two controller processes on one etcd, each on a host of its own (port 9203), as in
 * same-key-creates.system-spec.ts (Redis): two stub agents reachable from both make each
 * spawn key's VM once per node and count the spawns.
 */
describe('two controllers on one etcd', () => {
  let hostA: TestHost;
  let hostB: TestHost;
  let etcd: EtcdServer;
  let controllerA: Daemon;
  let beating: NodeJS.Timeout | undefined;
  const spawns = new Map<string, string[]>();
  const agents: Array<{ nodeId: string; stub: StubAgent; wgIp: string; made: HeartbeatVm[] }> = [];
  const base = (host: TestHost) => `http://${host.address}:9203`;

  const controllerOn = async (host: TestHost): Promise<Daemon> => {
    const daemon = new Daemon(
      FLEET_MAIN,
      { VM_FLEET_ETCD_ENDPOINTS: `http://${host.hostAddress}:${etcd.port}` },
      [],
      [],
      host.name,
    );
    await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd at /);
    return daemon;
  };

  const agentOn = async (nodeId: string, host: TestHost) => {
    const made: HeartbeatVm[] = [];
    const making = new Map<string, Promise<VmRecord>>();
    const stub = await new StubAgent(async (call, res) => {
      const spawnKey = spawnKeyOf(res)!;
      spawns.set(spawnKey, [...(spawns.get(spawnKey) ?? []), nodeId]);
      const earlier = making.get(spawnKey);
      if (earlier) return json(res, 200, await earlier);
      const vm = new Promise<VmRecord>((resolve) =>
        setTimeout(() => resolve(spawnedVm(call)), SPAWN_MS),
      );
      making.set(spawnKey, vm);
      made.push({ ...(await vm), idempotency_key: spawnKey });
      json(res, 201, await vm);
    }).start(host.hostAddress);
    agents.push({ nodeId, stub, wgIp: host.hostAddress, made });
  };

  /** Every agent's heartbeat to controller A, listing the VMs it made. */
  const beatAll = () =>
    Promise.all(
      agents.map(({ nodeId, stub, wgIp, made }) =>
        beat(base(hostA), nodeId, {
          wg_ip: wgIp,
          spawn_port: stub.port,
          ram_total_mb: 262_144,
          ram_used_mb: 4_096,
          vms: made,
          timestamp_utc: new Date().toISOString(),
        }).then(({ status }) => expect(status).toBe(200)),
      ),
    );

  const create = (host: TestHost, key: string) =>
    fetch(`${base(host)}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(request),
    }).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as { vm_id?: string },
    }));

  beforeAll(async () => {
    hostA = TestHost.create('ppn-etcd-a', 21);
    hostB = TestHost.create('ppn-etcd-b', 22);
    for (const host of [hostA, hostB]) {
      execFileSync('ip', ['-n', host.name, 'route', 'add', 'default', 'via', host.hostAddress]);
    }
    etcd = await EtcdServer.start([hostA.hostAddress, hostB.hostAddress]);
    [controllerA] = await Promise.all([controllerOn(hostA), controllerOn(hostB)]);
  });

  afterAll(async () => {
    clearInterval(beating);
    await stopAllDaemons();
    await Promise.all(agents.map(({ stub }) => stub.stop()));
    await etcd?.stop();
    hostA?.remove();
    hostB?.remove();
  });

  it('lists on one controller the nodes that beat to the other, and loses nothing when one restarts', async () => {
    await agentOn('node-a', hostA);
    await agentOn('node-b', hostB);
    await beatAll();
    // A beat that finds controller A restarting (below) is lost, as an agent's would be.
    beating = setInterval(() => void beatAll().catch(() => undefined), 2_000);
    const onB = await eventually(
      'both nodes listed by controller B',
      async () => {
        const listed = await nodesOn(base(hostB));
        return listed.length === 2 ? listed : undefined;
      },
      5_000,
    );
    expect(onB.map((node) => node.node_id).sort()).toEqual(['node-a', 'node-b']);

    expect(await controllerA.stop()).toEqual({ code: 0, signal: null });
    controllerA = await controllerOn(hostA);
    expect((await nodesOn(base(hostA))).map((node) => node.node_id).sort()).toEqual([
      'node-a',
      'node-b',
    ]);
  });

  it(`makes one VM per Idempotency-Key sent to both at once: ${PAIRS} pairs, one spawn each, both answers naming it`, async () => {
    const problems: string[] = [];
    for (let first = 0; first < PAIRS; first += PAIRS_AT_ONCE) {
      await Promise.all(
        Array.from({ length: PAIRS_AT_ONCE }, async (_, index) => {
          const key = `pair-${first + index}`;
          const [onA, onB] = await Promise.all([create(hostA, key), create(hostB, key)]);
          const sentTo = spawns.get(spawnKeyFor(request, key)) ?? [];
          const statuses = [onA.status, onB.status].sort();
          if (
            sentTo.length !== 1 ||
            statuses.join() !== '200,201' ||
            onA.body.vm_id === undefined ||
            onA.body.vm_id !== onB.body.vm_id
          ) {
            problems.push(
              `${key}: spawned on [${sentTo.join(', ')}], answered ${onA.status} ${onA.body.vm_id} on A and ${onB.status} ${onB.body.vm_id} on B`,
            );
          }
        }),
      );
    }
    expect(problems).toEqual([]);
    expect(spawns.size).toBe(PAIRS);
    // A create through one is listed by the other.
    await beatAll();
    const vmsOnB = (await (await fetch(`${base(hostB)}/v1/vms`)).json()) as Array<{
      vm_id: string;
    }>;
    expect(vmsOnB).toHaveLength(PAIRS);
  });
});
