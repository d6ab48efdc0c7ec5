import { Logger } from '@nestjs/common';
import type { HeartbeatVm, RestoredVm } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { fleetConfig } from '../../../../test/support/configs';
import { FakeEtcd } from '../../../../test/support/fake-etcd';
import { heartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { EtcdNodeLeases } from '../nodes/etcd/etcd-node-leases';
import { SoleLeader } from '../nodes/leadership';
import { InMemoryNodesRepository } from '../nodes/memory/in-memory-nodes.repository';
import { InMemoryVmMoves } from '../nodes/memory/in-memory-vm-moves.repository';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesService } from '../nodes/nodes.service';
import { VmRestoreService } from '../operations/vm-restore.service';
import { RecoveryService } from './recovery.service';

const PROTECTED = 'vm-protected';
const UNPROTECTED = 'vm-unprotected';

describe('RecoveryService (etcd mode, the leader)', () => {
  let clock: FakeClock;
  let etcd: FakeEtcd;
  let leases: EtcdNodeLeases;
  let nodes: NodesService;
  let repository: InMemoryNodesRepository;
  let moves: InMemoryVmMoves;
  let leading: boolean;
  let restores: string[];
  let failWith: Error | undefined;
  let recovery: RecoveryService;
  let logs: string[];

  const beat = (nodeId: string, vms: HeartbeatVm[] = []) =>
    nodes.acceptHeartbeat(
      heartbeat({
        node_id: nodeId,
        wg_ip: nodeId === 'n1' ? '10.8.0.1' : '10.8.0.2',
        ram_total_mb: 8192,
        timestamp_utc: new Date(clock.wallNow()).toISOString(),
        vms,
      }),
    );

  beforeEach(() => {
    clock = new FakeClock();
    etcd = new FakeEtcd(clock);
    leases = new EtcdNodeLeases(etcd, 45);
    repository = new InMemoryNodesRepository();
    moves = new InMemoryVmMoves();
    const metrics = new FleetMetrics();
    nodes = new NodesService(repository, clock, metrics, new NodeTokens(), moves, leases);
    leading = true;
    restores = [];
    failWith = undefined;
    const restorer = {
      restore: async (vmId: string): Promise<RestoredVm> => {
        if (failWith) throw failWith;
        restores.push(vmId);
        await moves.record(vmId, { nodeId: 'n2', atWallMs: clock.wallNow() });
        return {
          vm: { node_id: 'n2' },
          point: {
            source: 'replica',
            backup_id: 'chain/0003',
            kind: 'incremental',
            taken_at: new Date(clock.wallNow() - 100_000).toISOString(),
            size_bytes: 1,
          },
          replaced_node_id: 'n1',
        } as unknown as RestoredVm;
      },
    } as unknown as VmRestoreService;
    const leadership = new (class extends SoleLeader {
      override isLeader(): boolean {
        return leading;
      }
    })();
    const config = fleetConfig({ VM_FLEET_COPIES: '1', VM_FLEET_RECOVER_AFTER_S: '90' });
    recovery = new RecoveryService(
      leases,
      leadership,
      repository,
      moves,
      restorer,
      clock,
      config,
      metrics,
    );
    logs = [];
    const keep = (message: unknown) => void logs.push(String(message));
    jest.spyOn(Logger.prototype, 'log').mockImplementation(keep);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(keep);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(keep);
  });

  afterEach(() => jest.restoreAllMocks());

  /** n1 runs a protected and an unprotected VM, then stops heartbeating; n2 lives on. */
  async function n1Lost(): Promise<void> {
    expect(
      await beat('n1', [
        { ...vmRecord(PROTECTED), copies: { count: 1, every_s: 60 } },
        { ...vmRecord(UNPROTECTED), copies: { count: 0, every_s: 60 } },
      ]),
    ).toEqual({ accepted: true, fence_after_s: 45 });
  }

  async function passAfter(ms: number) {
    for (let step = 0; step < ms; step += 10_000) {
      clock.advance(Math.min(10_000, ms - step));
      await beat('n2');
      await nodes.dropStaleNodes();
    }
    return recovery.recoverLapsedNodes();
  }

  it('restores only the protected VMs, only once recover_after_s passed since the last renewal, raising each generation', async () => {
    await n1Lost();
    expect(await passAfter(89_000)).toEqual([]);
    expect(restores).toEqual([]);
    expect(await passAfter(2_000)).toEqual([
      {
        nodeId: 'n1',
        recovered: [PROTECTED],
        failed: [],
        unprotected: [UNPROTECTED],
        cameBack: false,
      },
    ]);
    expect(restores).toEqual([PROTECTED]);
    expect(await leases.generationsOf([PROTECTED])).toEqual(new Map([[PROTECTED, 1]]));
    expect(logs).toContainEqual(
      expect.stringMatching(
        /^node n1 lost \(last lease renewal 2026-08-06T12:00:00(\.0+)?Z\): vm vm-protected recovered on node n2 from its replica chain\/0003 taken \S+ \(copy age 100 s\), generation 1$/,
      ),
    );
    // Done: the next pass finds nothing, and n1, back, is renewed and told it is superseded.
    expect(await passAfter(5_000)).toEqual([]);
    expect(await beat('n1', [vmRecord(PROTECTED)])).toEqual({
      accepted: true,
      superseded_vm_ids: [PROTECTED],
      fence_after_s: 45,
    });
  });

  it('judges no node in its first 30 s (after a power cut, agents have a staleness window to beat again)', async () => {
    await n1Lost();
    clock.advance(120_000);
    const restarted = new RecoveryService(
      leases,
      new SoleLeader(),
      repository,
      moves,
      { restore: () => Promise.reject(new Error('not expected')) } as unknown as VmRestoreService,
      clock,
      fleetConfig({}),
      new FleetMetrics(),
    );
    expect(await restarted.recoverLapsedNodes()).toEqual([]);
    clock.advance(25_000);
    await beat('n1', [{ ...vmRecord(PROTECTED), copies: { count: 1, every_s: 60 } }]);
    clock.advance(5_000);
    expect(await restarted.recoverLapsedNodes()).toEqual([]);
    expect(await leases.lapsed(clock.wallNow())).toEqual([]);
  });

  it('does nothing on a controller that does not lead', async () => {
    await n1Lost();
    leading = false;
    expect(await passAfter(120_000)).toEqual([]);
    expect(restores).toEqual([]);
  });

  it('tries a failed restore again at each pass, logging its reason once, and keeps the node from renewing meanwhile', async () => {
    await n1Lost();
    failWith = new Error('no live node holds a copy of vm vm-protected');
    expect((await passAfter(91_000))[0]).toMatchObject({ failed: [PROTECTED] });
    expect((await passAfter(5_000))[0]).toMatchObject({ failed: [PROTECTED] });
    expect(logs.filter((line) => line.includes('not recovered'))).toHaveLength(1);
    failWith = undefined;
    expect((await passAfter(5_000))[0]).toMatchObject({ recovered: [PROTECTED] });
  });

  it('gives the node back its VMs when it heartbeats again before they were recovered', async () => {
    await n1Lost();
    failWith = new Error('the holder is full');
    await passAfter(91_000);
    // Marked: its heartbeat is taken but its lease not renewed (its agent stays fenced).
    expect(await beat('n1', [vmRecord(PROTECTED)])).toEqual({ accepted: true });
    expect((await recovery.recoverLapsedNodes())[0]).toMatchObject({ cameBack: true });
    expect(await beat('n1', [vmRecord(PROTECTED)])).toEqual({ accepted: true, fence_after_s: 45 });
    expect(restores).toEqual([]);
  });

  it('sends its default copy count beside fence_after_s, and only then: the agent fences what recovery restores', async () => {
    const metrics = new FleetMetrics();
    const withDefault = (copies: string, nodeLeases?: EtcdNodeLeases) =>
      new NodesService(
        repository,
        clock,
        metrics,
        new NodeTokens(),
        moves,
        nodeLeases,
        undefined,
        fleetConfig({ VM_FLEET_COPIES: copies }),
      );
    nodes = withDefault('0', leases);
    expect(await beat('n1', [vmRecord(UNPROTECTED)])).toEqual({
      accepted: true,
      fence_after_s: 45,
      copies_default: 0,
    });
    // Its VM without a policy is, to recovery, unprotected as well: never restored elsewhere.
    recovery = new RecoveryService(
      leases,
      new SoleLeader(),
      repository,
      moves,
      { restore: () => Promise.reject(new Error('not expected')) } as unknown as VmRestoreService,
      clock,
      fleetConfig({ VM_FLEET_COPIES: '0', VM_FLEET_RECOVER_AFTER_S: '90' }),
      metrics,
    );
    expect((await passAfter(120_000))[0]).toMatchObject({
      recovered: [],
      unprotected: [UNPROTECTED],
    });
    nodes = withDefault('2', leases);
    expect(await beat('n2')).toEqual({ accepted: true, fence_after_s: 45, copies_default: 2 });
    // etcd unreachable: no renewal, so neither field.
    etcd.down = true;
    expect(await beat('n2')).toEqual({ accepted: true });
  });
});
