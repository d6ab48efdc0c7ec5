import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CopyGrant } from '@app/daemon';
import { StartReplicaTransfer } from '@app/fleet-domain';
import { vmHostConfig } from '../../../../test/support/configs';
import { FakeClock } from '../../../../test/support/fake-clock';
import { VmCopier } from '../vms/copies/vm-copier';
import { BackupFolder } from '../vms/copies/backup-folder';
import { ReplicaGrantFloor, ReplicaGrantStaleError } from '../vms/copies/replica-grant-floor';
import { ReplicaGrantFloors } from '../vms/copies/replica-grant-floors';
import { ReplicaTransferGoneError } from './replicas.errors';
import { ReplicasService } from './replicas.service';

const VM = 'vm-00000000000000c7';

class FakeCopier {
  check(): Promise<void> {
    return Promise.resolve();
  }
  describe(): Promise<{ tool: string; virtualSizeBytes: number | null }> {
    return Promise.resolve({ tool: 'qemu-img version 7.2.22', virtualSizeBytes: 4096 });
  }
}

function grant(issuedAtMs: number): CopyGrant {
  return {
    vm: VM,
    source: 'node-a',
    peer: 'node-b',
    expiresAtMs: Number.MAX_SAFE_INTEGER,
    issuedAtMs,
  };
}

function full(size: number, takenAt: string): StartReplicaTransfer {
  return { kind: 'full', size_bytes: size, taken_at: takenAt, vm_state: 'running' };
}

describe('ReplicasService: a restore recorded while a copy is under way', () => {
  let diskDir: string;
  let floors: ReplicaGrantFloors;
  let replicas: ReplicasService;

  beforeEach(async () => {
    diskDir = await mkdtemp(join(tmpdir(), 'replica-floor-'));
    const config = vmHostConfig({ VM_NODE_ID: 'node-b', VM_DISK_DIR: diskDir });
    floors = new ReplicaGrantFloors(config);
    replicas = new ReplicasService(
      config,
      new FakeCopier() as unknown as VmCopier,
      new FakeClock(),
      undefined,
      undefined,
      floors,
    );
  });

  afterEach(() => rm(diskDir, { recursive: true, force: true }));

  async function held(): Promise<{ chains: string[]; files: string[] }> {
    const chains = (await readdir(join(diskDir, 'replicas', VM))).filter(
      (name) => name !== 'grant-floor.json',
    );
    const manifest = JSON.parse(
      await readFile(join(diskDir, 'replicas', VM, chains[0], 'manifest.json'), 'utf8'),
    ) as { files: { file: string }[] };
    return { chains, files: manifest.files.map(({ file }) => file) };
  }

  async function firstCopy(): Promise<string> {
    const { transfer_id } = await replicas.start(VM, grant(1_000), full(4, '2026-08-06T12:00:00Z'));
    await replicas.chunk(VM, grant(1_000), transfer_id, 0, 4, Readable.from([Buffer.from('full')]));
    return (await replicas.finish(VM, grant(1_000), transfer_id)).chain_id!;
  }

  it('finish refuses a grant the floor refuses now: the staged file removed, the last good chain untouched', async () => {
    const first = await firstCopy();
    const { transfer_id } = await replicas.start(VM, grant(2_000), full(4, '2026-08-06T12:05:00Z'));
    await replicas.chunk(VM, grant(2_000), transfer_id, 0, 4, Readable.from([Buffer.from('next')]));
    // A restore recorded meanwhile (written straight to the floor, as another process would).
    await new ReplicaGrantFloor(new BackupFolder(join(diskDir, 'replicas'))).restored(VM, 3_000);
    await expect(replicas.finish(VM, grant(2_000), transfer_id)).rejects.toThrow(
      ReplicaGrantStaleError,
    );
    expect(await held()).toEqual({ chains: [first], files: ['0000-full.qcow2'] });
  });

  it('a restore recorded through the node floors gives up the VM transfers in flight', async () => {
    const first = await firstCopy();
    const { transfer_id } = await replicas.start(VM, grant(2_000), full(4, '2026-08-06T12:05:00Z'));
    await floors.restored(VM, 3_000);
    await expect(
      replicas.chunk(VM, grant(2_000), transfer_id, 0, 4, Readable.from([Buffer.from('next')])),
    ).rejects.toThrow(ReplicaTransferGoneError);
    expect(await held()).toEqual({ chains: [first], files: ['0000-full.qcow2'] });
  });

  it('records restores and chain starts one at a time: none lost', async () => {
    await firstCopy();
    await Promise.all([
      floors.restored(VM, 5_000),
      floors.admit(VM, grant(6_000), 'full', () => Promise.resolve()),
      floors.restored(VM, 4_000),
    ]);
    const floor = JSON.parse(
      await readFile(join(diskDir, 'replicas', VM, 'grant-floor.json'), 'utf8'),
    ) as { chain_iat_ms: number; restored_at_ms: number };
    expect(floor).toEqual({ chain_iat_ms: 6_000, restored_at_ms: 5_000 });
  });
});
