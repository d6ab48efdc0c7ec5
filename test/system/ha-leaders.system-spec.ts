import { existsSync } from 'node:fs';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import { eventually, stopAllDaemons, untilTime } from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { HaFleet, HaMachine } from '../support/ha-fleet';
import { listedVm } from '../support/ha-scenario';
import { QemuWatch } from '../support/ha-watch';

jest.setTimeout(300_000);

/** "Within seconds": what a create through the other controller may take after a kill. */
const WITHIN_MS = 15_000;

/**
 * Issue 36's "kill the controller leader and the etcd leader in turn" and "restart every
 * machine at once", on three machines (network namespaces, each an etcd member and an agent,
 * two of them a controller): creates and the web console keep working through the other
 * controller within seconds; after a power cut of all three, every VM runs again exactly once,
 * on its own node, nothing recovered elsewhere.
 */
describe('three machines: leaders killed in turn, then a power cut', () => {
  let fleet: HaFleet | undefined;
  const created: string[] = [];

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    fleet = await HaFleet.start('ppn-hl', 87);
  });

  afterAll(async () => {
    await stopAllDaemons();
    fleet?.remove();
  });

  /** A small unprotected VM created through `through`'s controller (201), its id kept. */
  const create = async (through: HaMachine, node?: HaMachine, copies = 0): Promise<string> => {
    const response = await fetch(`http://${through.host.address}:9203/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        vm_type: 'probe',
        ram_mb: 128,
        vcpu_count: 1,
        copies: { count: copies, every_s: 30 },
        ...(node ? { preferred_node: node.nodeId } : {}),
      }),
      signal: AbortSignal.timeout(5_000),
    });
    const body = (await response.json()) as { vm_id?: string; message?: string };
    if (response.status !== 201 || !body.vm_id) {
      throw new Error(`create answered ${response.status}: ${body.message}`);
    }
    created.push(body.vm_id);
    return body.vm_id;
  };

  /** Resolves with ms from `since` to the first create `through` takes. */
  const createsAgain = async (through: HaMachine, since: number): Promise<number> => {
    await eventually(
      `a create through ${through.nodeId}`,
      () => create(through).catch(() => undefined),
      WITHIN_MS + 5_000,
      250,
    );
    return Date.now() - since;
  };

  it('the leading controller killed: the other takes creates and serves the console within seconds, and leads', async () => {
    const ha = fleet!;
    const leader = await ha.leader();
    const other = ha.controllerMachines().find((machine) => machine !== leader)!;
    const killedAt = Date.now();
    leader.controller!.process.kill('SIGKILL');
    await leader.controller!.waitForExit();
    const tookMs = await createsAgain(other, killedAt);
    const page = await fetch(`http://${other.host.address}:9206/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(created.at(-1));
    expect(await ha.leader(20_000)).toBe(other);
    console.log(`[ha] controller leader killed: a create through the other after ${tookMs} ms`);
    expect(tookMs).toBeLessThanOrEqual(WITHIN_MS);

    // Started again, it follows.
    const again = await ha.startController(leader);
    await again.waitForOutput(/follows the leader/);
  });

  it('the etcd leader killed: creates through both controllers within seconds', async () => {
    const ha = fleet!;
    const etcdLeader = await ha.etcdLeader();
    const killedAt = Date.now();
    etcdLeader.etcd!.kill('SIGKILL');
    const took = await Promise.all(
      ha.controllerMachines().map((machine) => createsAgain(machine, killedAt)),
    );
    console.log(
      `[ha] etcd leader (${etcdLeader.nodeId}) killed: a create through each controller after ${took.join(', ')} ms`,
    );
    for (const each of took) expect(each).toBeLessThanOrEqual(WITHIN_MS);
    await ha.startEtcd(etcdLeader);
    // Those two gone again, so that the power cut boots fewer guests on a loaded machine.
    for (const vmId of created.splice(-2)) {
      const url = `http://${ha.controllerMachines()[0].host.address}:9203/v1/vms/${vmId}`;
      await eventually(
        `${vmId} deleted`,
        async () => ((await fetch(url, { method: 'DELETE' })).status === 204 ? true : undefined),
        30_000,
        500,
      );
    }
  });

  it('a power cut of all three: every VM runs again exactly once, on its own node', async () => {
    const ha = fleet!;
    const protectedVm = await create(ha.controllerMachines()[0], ha.machines[2], 1);
    const vms = [...created];
    const before = new Map<string, string>();
    for (const vmId of vms) {
      const vm = await eventually(
        `${vmId} running`,
        async () => {
          const listed = await listedVm(ha, vmId);
          return listed?.state === 'Running' ? listed : undefined;
        },
        120_000,
        250,
      );
      before.set(vmId, vm.node_id);
    }
    expect(before.get(protectedVm)).toBe(ha.machines[2].nodeId);

    for (const machine of ha.machines) machine.host.killAll();
    await Promise.all(ha.machines.map((machine) => ha.kill(machine)));
    const watches = vms.map((vmId) => new QemuWatch(ha.workDir, vmId, (a) => ha.nodeOfQemu(a)));
    try {
      // Back on: the members, the controllers, the agents, as the machines boot.
      await Promise.all(ha.machines.map((machine) => ha.startEtcd(machine)));
      await Promise.all(ha.controllerMachines().map((machine) => ha.startController(machine)));
      const controllersAt = Date.now();
      await Promise.all(ha.machines.map((machine) => ha.startAgent(machine)));
      for (const vmId of vms) {
        await eventually(
          `${vmId} running again`,
          async () => {
            const listed = await listedVm(ha, vmId);
            return listed?.state === 'Running' ? listed : undefined;
          },
          120_000,
          250,
        );
      }
      // Recovery judges no node before a staleness window after its controller started: past
      // it (and a recovery pass), nothing may have started anything a second time.
      await untilTime(controllersAt + NODE_STALE_AFTER_MS + 10_000);
      for (const [index, vmId] of vms.entries()) {
        expect((await listedVm(ha, vmId))?.node_id).toBe(before.get(vmId));
        expect(watches[index].overlaps).toEqual([]);
        const nodes = new Set([...watches[index].lives.values()].map((life) => life.nodeId));
        expect([...nodes]).toEqual([before.get(vmId)]);
      }
      for (const machine of ha.controllerMachines()) {
        expect(machine.controller!.output).not.toMatch(/recovered on node/);
      }
      console.log(`[ha] power cut: ${vms.length} VMs back, each once, on its own node`);
    } finally {
      for (const watch of watches) watch.stop();
    }
  });
});
