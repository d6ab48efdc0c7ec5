import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deriveTenantToken } from '@app/daemon';
import type { HeartbeatVm } from '@app/fleet-domain';
import { Daemon, FLEET_MAIN, ListedNode, eventually, stopAllDaemons } from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { RedisServer } from '../support/redis-server';
import { EtcdServer } from '../support/etcd-server';
import { scratchFolder } from '../support/scratch-folders';
import { StubAgent, json, spawnedVm } from '../support/stub-agent';

jest.setTimeout(120_000);

const API_TOKEN = 'api-token-7e2c9a4f0b6d1835';
const TENANT_SECRET = 'tenant-secret-4b9e1d7a3c0f6285e2a8d4c1b7f3e096';
const ACME = deriveTenantToken(TENANT_SECRET, 'acme');
const QUOTA_VMS = 5;
/** Creates sent at once, half to each controller. */
const CREATES = 24;

/**
 * A tenant's quota on two controller processes sharing one real Redis, or etcd: creates of the tenant
 * at the quota's edge, sent at once to both, make at most the quota (each controller checks
 * the tenant's use and holds the RAM under the tenant's claim in the store), and the tenant's use,
 * counted from the fleet's state in the store (the VMs the node lists with their tenant), still
 * refuses the next create after heartbeats and after a controller is restarted.
 */
/** A shared store the test starts, reachable from the test hosts' outer ends. */
interface SharedStore {
  /** The controller's variable naming it, as reached from `host`. */
  env(host: TestHost): NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

const sharedStores: Array<[string, (listen: string[]) => Promise<SharedStore>]> = [
  [
    'Redis',
    async (listen) => {
      const redis = await RedisServer.start(undefined, listen);
      return {
        env: (host) => ({ VM_FLEET_REDIS_URL: `redis://${host.hostAddress}:${redis.port}` }),
        stop: () => redis.stop(),
      };
    },
  ],
  [
    'etcd',
    async (listen) => {
      const etcd = await EtcdServer.start(listen);
      return {
        env: (host) => ({ VM_FLEET_ETCD_ENDPOINTS: `http://${host.hostAddress}:${etcd.port}` }),
        stop: () => etcd.stop(),
      };
    },
  ],
];

describe.each(sharedStores)(
  "a tenant's quota on two controllers sharing one %s",
  (_name, startStore) => {
    let hostA: TestHost;
    let hostB: TestHost;
    let store: SharedStore;
    let agent: StubAgent;
    let beating: NodeJS.Timeout | undefined;
    let env: NodeJS.ProcessEnv;
    let controllerB: Daemon;
    /** The VMs the stub agent made, listed in its heartbeats with their tenant, as a real agent does. */
    const made: HeartbeatVm[] = [];

    const controllerOn = async (host: TestHost): Promise<Daemon> => {
      const daemon = new Daemon(FLEET_MAIN, { ...env, ...store.env(host) }, [], [], host.name);
      await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203/);
      await daemon.waitForOutput(/(Redis|etcd) at .* connected/);
      return daemon;
    };

    const beat = () =>
      fetch(`http://${hostA.address}:9203/v1/nodes/heartbeat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          heartbeat({
            node_id: 'node-a',
            wg_ip: hostA.hostAddress,
            spawn_port: agent.port,
            ram_total_mb: 262_144,
            ram_used_mb: 4_096,
            vms: made,
            timestamp_utc: new Date().toISOString(),
          }),
        ),
      }).then((res) => expect(res.status).toBe(200));

    const create = (host: TestHost) =>
      fetch(`http://${host.address}:9203/v1/vms`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ACME}` },
        body: JSON.stringify({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 }),
      }).then(async (res) => ({
        status: res.status,
        message: ((await res.json()) as { message?: string }).message,
      }));

    beforeAll(async () => {
      const folder = scratchFolder('ppn-tenant-quotas-');
      const quotas = join(folder, 'quotas.json');
      writeFileSync(quotas, JSON.stringify({ acme: { vms: QUOTA_VMS } }));
      env = {
        VM_FLEET_API_TOKEN: API_TOKEN,
        VM_FLEET_TENANT_SECRET: TENANT_SECRET,
        VM_FLEET_TENANT_QUOTAS_FILE: quotas,
      };
      hostA = TestHost.create('ppn-quota-a', 61);
      hostB = TestHost.create('ppn-quota-b', 62);
      for (const host of [hostA, hostB]) {
        execFileSync('ip', ['-n', host.name, 'route', 'add', 'default', 'via', host.hostAddress]);
      }
      store = await startStore([hostA.hostAddress, hostB.hostAddress]);
      // Slow enough that every create is in flight (held, not listed) while the others are checked.
      agent = await new StubAgent(async (call, res) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const vm = spawnedVm(call);
        made.push(vm);
        json(res, 201, vm);
      }).start(hostA.hostAddress);
      [, controllerB] = await Promise.all([controllerOn(hostA), controllerOn(hostB)]);
      await beat();
      beating = setInterval(() => void beat(), 2_000);
      await eventually(
        'the node listed on B',
        async () => {
          const listed = (await (
            await fetch(`http://${hostB.address}:9203/v1/nodes`, {
              headers: { authorization: `Bearer ${API_TOKEN}` },
            })
          ).json()) as ListedNode[];
          return listed.length === 1 || undefined;
        },
        5_000,
      );
    });

    afterAll(async () => {
      clearInterval(beating);
      await stopAllDaemons();
      await agent?.stop();
      await store?.stop();
      hostA?.remove();
      hostB?.remove();
    });

    it(`makes at most ${QUOTA_VMS} VMs of ${CREATES} creates sent at once to both, and keeps refusing after heartbeats and a restart`, async () => {
      const answers = await Promise.all(
        Array.from({ length: CREATES }, (_, index) => create(index % 2 === 0 ? hostA : hostB)),
      );
      const statuses = answers.map(({ status }) => status);
      expect(statuses.filter((status) => status === 201)).toHaveLength(QUOTA_VMS);
      expect(statuses.filter((status) => status === 429)).toHaveLength(CREATES - QUOTA_VMS);
      expect(answers.find(({ status }) => status === 429)?.message).toMatch(
        /^tenant acme would go beyond its quota, nothing was made: vms: 5 VMs in use \+ 1 requested > limit 5 VMs$/,
      );
      expect(agent.calls).toHaveLength(QUOTA_VMS);

      // Heartbeats now list the VMs (the holds end): still counted, on both controllers.
      await beat();
      await beat();
      for (const host of [hostA, hostB]) expect((await create(host)).status).toBe(429);

      // Controller B restarted: it reads the tenant's use from the store, as A does.
      await controllerB.stop();
      controllerB = await controllerOn(hostB);
      await beat();
      for (const host of [hostB, hostA]) {
        const answer = await create(host);
        expect(answer).toEqual({
          status: 429,
          message: expect.stringContaining('vms: 5 VMs in use'),
        });
      }
      expect(agent.calls).toHaveLength(QUOTA_VMS);
    });
  },
);
