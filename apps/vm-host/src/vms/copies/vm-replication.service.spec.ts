import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CopyPlan, ReplicaState, StartReplicaTransfer } from '@app/fleet-domain';
import { vmHostConfig } from '../../../../../test/support/configs';
import { fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { PRIVATE_FILE_MODE } from '../files/vm-files';
import { CopyLocks } from './copy-locks';
import { PeerCallError, PeerTarget, PeerTransport, Throttle } from './peer-transport';
import { VmCopier } from './vm-copier';
import { VmReplicationService } from './vm-replication.service';

const VM = 'vm-00000000000000d1';
const CHAIN = '20260806T120000Z-abcd';

/** Copies as small files; a test makes the next one full by saying why. */
class FakeCopier extends VmCopier {
  convert(): Promise<void> {
    return Promise.reject(new Error('restores are not copied here'));
  }
  fullBecause: string | null = null;
  readonly asked: string[] = [];
  prepareRunning(_vmId: string, bitmap: string | null): Promise<string | null> {
    this.asked.push(`prepare ${bitmap}`);
    return Promise.resolve(this.fullBecause);
  }
  async copyRunningFull(_vmId: string, target: string, bitmap: string): Promise<void> {
    this.asked.push(`full ${bitmap}`);
    await writeFile(target, 'full', { mode: PRIVATE_FILE_MODE });
  }
  async copyRunningIncremental(
    _vmId: string,
    target: string,
    backing: string,
    bitmap: string,
  ): Promise<void> {
    this.asked.push(`incremental on ${backing} ${bitmap}`);
    await writeFile(target, 'inc', { mode: PRIVATE_FILE_MODE });
  }
  copyStopped(): Promise<void> {
    return Promise.reject(new Error('not stopped'));
  }
  check(): Promise<void> {
    return Promise.resolve();
  }
  describe(): Promise<{ tool: string; virtualSizeBytes: number | null }> {
    return Promise.resolve({ tool: 'qemu-img', virtualSizeBytes: 4096 });
  }
}

/** A peer that keeps one chain in memory; `failNext` makes the next send fail with it. */
class FakePeer extends PeerTransport {
  held: ReplicaState = {
    vm_id: VM,
    source_node_id: null,
    chain_id: null,
    files: 0,
    last_file: null,
    copied_at: null,
    size_bytes: 0,
  };
  failNext?: PeerCallError;
  readonly sent: Array<Pick<StartReplicaTransfer, 'kind' | 'chain_id' | 'index'>> = [];

  constructor() {
    super(new Throttle(0));
  }

  override state(): Promise<ReplicaState> {
    return Promise.resolve({ ...this.held });
  }

  override send(
    _peer: PeerTarget,
    _vmId: string,
    _file: string,
    size: number,
    request: StartReplicaTransfer,
  ): Promise<ReplicaState> {
    const { kind, chain_id, index } = request;
    this.sent.push({ kind, ...(chain_id ? { chain_id, index } : {}) });
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) return Promise.reject(failure);
    const files = kind === 'full' ? 1 : this.held.files + 1;
    this.held = {
      ...this.held,
      source_node_id: 'node-a',
      chain_id: kind === 'full' ? CHAIN : this.held.chain_id,
      files,
      last_file: `${String(files - 1).padStart(4, '0')}-${kind}.qcow2`,
      copied_at: request.taken_at,
      size_bytes: this.held.size_bytes + size,
    };
    return Promise.resolve({ ...this.held });
  }
}

describe('VmReplicationService: copies of a VM to its peers', () => {
  let bed: VmBed;
  let copier: FakeCopier;
  let peer: FakePeer;
  let replication: VmReplicationService;
  const plan: CopyPlan = {
    every_s: 60,
    peers: [
      {
        node_id: 'node-b',
        address: '10.8.0.2:9204',
        grant: 'e30.' + 'A'.repeat(43),
        expires_at: '2099-01-01T00:00:00.000Z',
      },
    ],
  };

  beforeEach(async () => {
    bed = await openVmBed('vm-replication-');
    copier = new FakeCopier();
    peer = new FakePeer();
    const config = vmHostConfig({ VM_NODE_ID: 'node-a', VM_DISK_DIR: bed.root });
    const hostFacts = fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 });
    const { sidecars, lifecycle } = await vmServices({ ...bed, hostFacts, config });
    await bed.leftBehind(VM, { started_at: '2026-08-06T11:00:00.000Z' });
    await writeFile(bed.files.disk(VM), 'disk');
    replication = new VmReplicationService(
      config,
      bed.files,
      sidecars,
      lifecycle,
      copier,
      new CopyLocks(),
      bed.clock,
      new HostMetrics(),
      peer,
    );
    await replication.setPlan(VM, plan);
  });

  afterEach(() => closeVmBed(bed));

  const copy = async () => replication.copyVm((await bed.files.readSidecar(VM))!, plan);

  it('keeps the plan privately beside the VM, then copies full first and incrementals after, on the peer chain', async () => {
    expect(await replication.planOf(VM)).toEqual(plan);
    await copy();
    await copy();
    expect(peer.sent).toEqual([
      { kind: 'full' },
      { kind: 'incremental', chain_id: CHAIN, index: 1 },
    ]);
    expect(copier.asked).toEqual([
      'prepare ppn-replica-node-b',
      'full ppn-replica-node-b',
      'prepare ppn-replica-node-b',
      'incremental on 0000-full.qcow2 ppn-replica-node-b',
    ]);
    // Nothing staged stays behind.
    expect(await readdir(join(bed.root, 'copies-staging', VM, 'node-b'))).toEqual(['state.json']);
  });

  it('copies full by itself when the bitmap cannot be trusted, or the peer holds another chain', async () => {
    await copy();
    copier.fullBecause = 'bitmap ppn-replica-node-b is inconsistent (QEMU ended uncleanly)';
    await copy();
    copier.fullBecause = null;
    peer.held = { ...peer.held, chain_id: '20260806T130000Z-ffff' };
    await copy();
    peer.held = { ...peer.held, source_node_id: 'node-c' };
    await copy();
    expect(peer.sent.map(({ kind }) => kind)).toEqual(['full', 'full', 'full', 'full']);
  });

  it('sends the staged copy again after a failed send, and copies full once the peer refuses what it adds to', async () => {
    await copy();
    peer.failNext = new PeerCallError('node node-b at 10.8.0.2:9204: ECONNREFUSED', 0);
    await expect(copy()).rejects.toThrow('ECONNREFUSED');
    expect(replication.lastError(VM)).toBe(
      'copy to node node-b failed: node node-b at 10.8.0.2:9204: ECONNREFUSED',
    );
    await copy();
    // The same incremental, not a new copy: its changes are in no bitmap any more.
    expect(copier.asked.filter((line) => line.startsWith('incremental'))).toHaveLength(1);
    expect(peer.sent.slice(1)).toEqual([
      { kind: 'incremental', chain_id: CHAIN, index: 1 },
      { kind: 'incremental', chain_id: CHAIN, index: 1 },
    ]);
    expect(replication.lastError(VM)).toBeUndefined();

    peer.failNext = new PeerCallError('node node-b answered 409', 409);
    await expect(copy()).rejects.toThrow('409');
    await copy();
    expect(peer.sent.at(-1)).toEqual({ kind: 'full' });
  });

  it('copies full when a copy was taken and lost before the peer had it', async () => {
    await copy();
    peer.failNext = new PeerCallError('node node-b answered 507', 507);
    await expect(copy()).rejects.toThrow('507');
    const dir = join(bed.root, 'copies-staging', VM, 'node-b');
    const state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8'));
    expect(state.pending).toMatchObject({ kind: 'incremental', complete: true });
    await rm(join(dir, 'staged.qcow2'));
    await copy();
    expect(peer.sent.at(-1)).toEqual({ kind: 'full' });
  });
});
