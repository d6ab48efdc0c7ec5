import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  listedNodes,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { scratchFolder } from '../support/scratch-folders';

/**
 * One sidecar with values the agent reads but the wire refuses must not take its node out: with
 * a real controller and real agents (each with one such sidecar and one good one, neither with a
 * process), every heartbeat is taken, the node stays listed, its good VM is listed as it is and
 * the bad one Error, with the reason naming the field, on the operations listener.
 */
jest.setTimeout(60_000);

const OPS_URL = 'http://127.0.0.1:9206';
const workDir = scratchFolder('bad-sidecar-');
/** VM ids are the fleet's: each node's own. */
const badVm = (index: number): string => `vm-00000000000000b${index}`;
const goodVm = (index: number): string => `vm-00000000000000c${index}`;

const BAD_VALUES = [
  ['vm_type', 'bad type!', 'unknown'],
  ['tenant_id', 'a b', null],
  ['ram_alloc_mb', 3e9, 1],
  ['vcpu_count', 70_000, 1],
  ['started_at', 'yesterday', null],
] as const;

interface FleetVm {
  vm_id: string;
  node_id: string;
  state: string;
  vm_type: string;
  tenant_id: string | null;
  ram_alloc_mb: number;
  vcpu_count: number;
  started_at: string | null;
}

/** A sidecar as an agent writes it: a VM started once, stopped by its operator, no process. */
function writeSidecar(diskDir: string, vmId: string, fields: Record<string, unknown>): void {
  mkdirSync(join(diskDir, 'run', vmId), { recursive: true, mode: 0o700 });
  const sidecar = {
    vm_id: vmId,
    vm_type: 'web',
    tenant_id: 'acme',
    ram_alloc_mb: 256,
    vcpu_count: 1,
    host_ports: [],
    created_at: '2026-08-06T11:00:00.000Z',
    started_at: '2026-08-06T11:00:01.000Z',
    error: null,
    driver: { kind: 'qemu', accel: 'tcg', pid: null },
    idempotency_key: null,
    desired_state: 'stopped',
    last_exit: null,
    ...fields,
  };
  writeFileSync(join(diskDir, 'run', vmId, 'vm.json'), JSON.stringify(sidecar), { mode: 0o600 });
}

describe('a node with one sidecar the wire refuses', () => {
  let fleet: Daemon;
  const agents: Daemon[] = [];

  beforeAll(async () => {
    fleet = await listeningFleetDaemon();
    await fleet.waitForOutput(/operations listener on 127\.0\.0\.1:9206/);
    for (const [index, [field, value]] of BAD_VALUES.entries()) {
      const diskDir = join(workDir, field);
      writeSidecar(diskDir, badVm(index), { [field]: value });
      writeSidecar(diskDir, goodVm(index), {});
      const agent = startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: `bad-${field.replace('_', '-')}`,
        VM_WG_IP: `127.0.0.${41 + index}`,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: diskDir,
      });
      agents.push(agent);
    }
    // Without the fix, no heartbeat of these nodes is ever taken: never enrolled.
    await Promise.all(agents.map((agent) => enrolled(agent)));
  });

  afterAll(() => stopAllDaemons());

  it.each(BAD_VALUES.map((bad, index) => [...bad, index] as const))(
    '%s %j: the node beats on and stays listed; its good VM as it is, the bad one Error naming it',
    async (field, _value, listedAs, index) => {
      const nodeId = `bad-${field.replace('_', '-')}`;
      const first = (await listedNodes()).find((node) => node.node_id === nodeId);
      expect(first?.vm_count).toBe(2);
      // Heartbeats after the first are taken too.
      await eventually(
        `a later heartbeat of ${nodeId}`,
        async () => {
          const node = (await listedNodes()).find((listed) => listed.node_id === nodeId);
          return node && node.last_heartbeat > first!.last_heartbeat ? node : undefined;
        },
        5_000,
      );
      const vms = (await getJson<FleetVm[]>('/v1/vms')).filter((vm) => vm.node_id === nodeId);
      expect(vms).toEqual([
        expect.objectContaining({
          vm_id: badVm(index),
          state: 'Error',
          vm_type: 'web',
          tenant_id: 'acme',
          ram_alloc_mb: 256,
          vcpu_count: 1,
          started_at: '2026-08-06T11:00:01.000Z',
          [field]: listedAs,
        }),
        expect.objectContaining({ vm_id: goodVm(index), state: 'Stopped', vm_type: 'web' }),
      ]);
      const answer = await fetch(`${OPS_URL}/v1/vms/${badVm(index)}`);
      expect(answer.status).toBe(200);
      const { life_cycle } = (await answer.json()) as { life_cycle: { reason: string } | null };
      expect(life_cycle?.reason).toBe(
        `sidecar holds values the fleet's wire refuses (${field}); ${field} listed as ${JSON.stringify(listedAs)}`,
      );
      expect(agents[index].output).not.toContain('heartbeat to');
    },
  );
});
