import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CopyGrant } from '@app/daemon';
import { StartReplicaTransfer } from '@app/fleet-domain';
import { vmHostConfig } from '../../../../test/support/configs';
import { FakeClock } from '../../../../test/support/fake-clock';
import { VmCopier } from '../vms/copies/vm-copier';
import {
  ReplicaConflictError,
  ReplicaNoRoomError,
  ReplicaTransferGoneError,
  ReplicaTransferInvalidError,
} from './replicas.errors';
import { ReplicasService } from './replicas.service';
import { VmDiskRoom } from '../vms/admission/vm-disk-room';
import { VmSidecars } from '../vms/files/vm-sidecars';

const VM = 'vm-00000000000000c1';

/** Takes every file as sound unless told otherwise. */
class FakeCopier extends VmCopier {
  convert(): Promise<void> {
    return Promise.reject(new Error('restores are not copied here'));
  }
  checkFails = false;
  prepareRunning(): Promise<string | null> {
    return Promise.resolve(null);
  }
  copyRunningFull(): Promise<void> {
    return Promise.resolve();
  }
  copyRunningIncremental(): Promise<void> {
    return Promise.resolve();
  }
  copyStopped(): Promise<void> {
    return Promise.resolve();
  }
  check(): Promise<void> {
    return this.checkFails ? Promise.reject(new Error('corrupt')) : Promise.resolve();
  }
  describe(): Promise<{ tool: string; virtualSizeBytes: number | null }> {
    return Promise.resolve({ tool: 'qemu-img version 7.2.22', virtualSizeBytes: 4096 });
  }
}

function grant(source = 'node-a', vm = VM): CopyGrant {
  return { vm, source, peer: 'node-b', expiresAtMs: Number.MAX_SAFE_INTEGER };
}

function full(size: number, takenAt = '2026-08-06T12:00:00Z'): StartReplicaTransfer {
  return { kind: 'full', size_bytes: size, taken_at: takenAt, vm_state: 'running' };
}

describe('ReplicasService: a peer keeps copies of other nodes VMs', () => {
  let diskDir: string;
  let copier: FakeCopier;
  let clock: FakeClock;
  let replicas: ReplicasService;

  beforeEach(async () => {
    diskDir = await mkdtemp(join(tmpdir(), 'replicas-'));
    copier = new FakeCopier();
    clock = new FakeClock();
    replicas = new ReplicasService(
      vmHostConfig({ VM_NODE_ID: 'node-b', VM_DISK_DIR: diskDir }),
      copier,
      clock,
    );
  });

  afterEach(() => rm(diskDir, { recursive: true, force: true }));

  async function send(
    request: StartReplicaTransfer,
    bytes: Buffer,
    source = 'node-a',
  ): Promise<Awaited<ReturnType<ReplicasService['finish']>>> {
    const { transfer_id } = await replicas.start(VM, grant(source), request);
    await replicas.chunk(VM, grant(source), transfer_id, 0, bytes.length, Readable.from([bytes]));
    return replicas.finish(VM, grant(source), transfer_id);
  }

  it('takes a full copy then incrementals into one chain, in the backup chain format', async () => {
    const first = await send(full(4), Buffer.from('full'));
    expect(first).toMatchObject({
      source_node_id: 'node-a',
      files: 1,
      last_file: '0000-full.qcow2',
    });
    const second = await send(
      {
        kind: 'incremental',
        chain_id: first.chain_id!,
        index: 1,
        size_bytes: 3,
        taken_at: '2026-08-06T12:01:00Z',
        vm_state: 'running',
      },
      Buffer.from('inc'),
    );
    expect(second).toMatchObject({
      chain_id: first.chain_id,
      files: 2,
      last_file: '0001-incremental.qcow2',
      copied_at: '2026-08-06T12:01:00Z',
      size_bytes: 7,
    });
    const dir = join(diskDir, 'replicas', VM, first.chain_id!);
    expect((await readdir(dir)).sort()).toEqual([
      '0000-full.qcow2',
      '0001-incremental.qcow2',
      'manifest.json',
    ]);
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
    expect(manifest.files.map((file: { backing: string | null }) => file.backing)).toEqual([
      null,
      '0000-full.qcow2',
    ]);
    expect(await replicas.replicas()).toEqual([
      { vm_id: VM, source_node_id: 'node-a', copied_at: '2026-08-06T12:01:00Z', size_bytes: 7 },
    ]);
  });

  it('refuses an incremental that does not add to the chain held (another chain, place or node)', async () => {
    const first = await send(full(4), Buffer.from('full'));
    const incremental = (overrides: Partial<StartReplicaTransfer>): StartReplicaTransfer => ({
      kind: 'incremental',
      chain_id: first.chain_id!,
      index: 1,
      size_bytes: 3,
      taken_at: '2026-08-06T12:01:00Z',
      vm_state: 'running',
      ...overrides,
    });
    await expect(
      replicas.start(VM, grant(), incremental({ chain_id: '20260806T120000Z-ffff' })),
    ).rejects.toThrow(ReplicaConflictError);
    await expect(replicas.start(VM, grant(), incremental({ index: 2 }))).rejects.toThrow(
      ReplicaConflictError,
    );
    await expect(replicas.start(VM, grant('node-c'), incremental({}))).rejects.toThrow(
      ReplicaConflictError,
    );
  });

  it('keeps the old chain until a new full one is complete, then removes it', async () => {
    const first = await send(full(4), Buffer.from('full'));
    const { transfer_id } = await replicas.start(VM, grant('node-c'), full(4));
    // Cut midway: the old chain is still what is held.
    await expect(
      replicas.chunk(VM, grant('node-c'), transfer_id, 0, 4, Readable.from([Buffer.from('ab')])),
    ).rejects.toThrow(ReplicaTransferInvalidError);
    expect(await replicas.state(VM)).toMatchObject({ chain_id: first.chain_id, files: 1 });
    expect(await readdir(join(diskDir, 'replicas', VM))).toEqual([first.chain_id]);
    await expect(replicas.finish(VM, grant('node-c'), transfer_id)).rejects.toThrow(
      ReplicaTransferGoneError,
    );

    clock.advance(1000);
    const moved = await send(full(4), Buffer.from('move'), 'node-c');
    expect(moved).toMatchObject({ source_node_id: 'node-c', files: 1 });
    expect(await readdir(join(diskDir, 'replicas', VM))).toEqual([moved.chain_id]);
  });

  it('takes nothing that fails its check, and removes it', async () => {
    const first = await send(full(4), Buffer.from('full'));
    copier.checkFails = true;
    await expect(send(full(4), Buffer.from('bad!'))).rejects.toThrow(ReplicaTransferInvalidError);
    expect(await readdir(join(diskDir, 'replicas', VM))).toEqual([first.chain_id]);
  });

  it('refuses a chunk past the announced size, out of order, or finished early', async () => {
    const { transfer_id } = await replicas.start(VM, grant(), full(4));
    await expect(
      replicas.chunk(VM, grant(), transfer_id, 2, 2, Readable.from([Buffer.from('ab')])),
    ).rejects.toThrow(ReplicaConflictError);
    await replicas.chunk(VM, grant(), transfer_id, 0, 2, Readable.from([Buffer.from('ab')]));
    await expect(replicas.finish(VM, grant(), transfer_id)).rejects.toThrow(ReplicaConflictError);
    await expect(
      replicas.chunk(VM, grant(), transfer_id, 2, 3, Readable.from([Buffer.from('cde')])),
    ).rejects.toThrow(ReplicaTransferInvalidError);
    // Given up: its new chain's folder is gone.
    expect(await readdir(join(diskDir, 'replicas', VM))).toEqual([]);
  });

  it('takes one of two chunks sent at once for the same offset, refusing the other', async () => {
    const bytes = Buffer.alloc(4096, 7);
    const { transfer_id } = await replicas.start(VM, grant(), full(bytes.length));
    const chunk = () =>
      replicas.chunk(VM, grant(), transfer_id, 0, bytes.length, Readable.from([bytes]));
    const outcomes = await Promise.allSettled([chunk(), chunk()]);
    expect(outcomes.map(({ status }) => status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected');
    expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(ReplicaConflictError);
    await replicas.finish(VM, grant(), transfer_id);
  });

  it('refuses (no room) a copy larger than the free room, writing nothing', async () => {
    await expect(replicas.start(VM, grant(), full(2 ** 52))).rejects.toThrow(ReplicaNoRoomError);
    expect(await readdir(join(diskDir, 'replicas')).catch(() => [])).toEqual([]);
  });

  it("never takes the room promised to this node's own VMs' disks, nor what transfers under way will write", async () => {
    // Free space aplenty, but only 1 MiB committable left for disks (its VMs' thin disks).
    const promised = new ReplicasService(
      vmHostConfig({ VM_NODE_ID: 'node-b', VM_DISK_DIR: diskDir }),
      copier,
      clock,
      { room: () => Promise.resolve({ committableBytes: 1024 * 1024 }) } as unknown as VmDiskRoom,
      { all: () => Promise.resolve([]) } as unknown as VmSidecars,
    );
    await expect(promised.start(VM, grant(), full(2 * 1024 * 1024))).rejects.toThrow(
      ReplicaNoRoomError,
    );
    await promised.start(VM, grant(), full(768 * 1024));
    // The first transfer's 768 KiB still to come leave 256 KiB for another.
    await expect(
      promised.start(
        'vm-00000000000000b2',
        grant('node-a', 'vm-00000000000000b2'),
        full(512 * 1024),
      ),
    ).rejects.toThrow(ReplicaNoRoomError);
  });
});
