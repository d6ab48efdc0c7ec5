import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentRestoreRequest, VmState } from '@app/fleet-domain';
import { JsonErrorFilter } from '@app/daemon';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VMS_ERROR_STATUSES } from '../vms.error-statuses';
import { MANIFEST_FORMAT } from './backup-folder';
import { VmCopier } from './vm-copier';
import { VmRestoresService } from './vm-restores.service';

const VM = 'vm-00000000000000d1';
const CHAIN = '20261205T041700Z-3f2a';
const OLDER_CHAIN = '20261204T041700Z-0b1c';

/** A copier whose convert writes what the chain's file holds, followed by the file's name. */
class FakeCopier extends VmCopier {
  readonly converted: string[] = [];
  convert(file: string, target: string): Promise<void> {
    this.converted.push(file);
    return readFile(file).then((data) => writeFile(target, data));
  }
  prepareRunning(): Promise<string | null> {
    return Promise.reject(new Error('not used'));
  }
  copyRunningFull(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
  copyRunningIncremental(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
  copyStopped(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
  check(): Promise<void> {
    return Promise.resolve();
  }
  virtualSizeBytes: number | null = null;
  describe(): Promise<{ tool: string; virtualSizeBytes: number | null }> {
    return Promise.resolve({ tool: 'qemu-img', virtualSizeBytes: this.virtualSizeBytes });
  }
}

/** A chain folder as the backups (or the replicas helper) write it: files, then the manifest. */
async function chain(
  root: string,
  chainId: string,
  takenAt: string[],
  { damage = false, vmId = VM } = {},
): Promise<void> {
  const dir = join(root, vmId, chainId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files: Array<Record<string, unknown> & { file: string }> = [];
  for (const [index, at] of takenAt.entries()) {
    const kind = index === 0 ? 'full' : 'incremental';
    const file = `${String(index).padStart(4, '0')}-${kind}.qcow2`;
    const data = Buffer.from(`disk ${chainId} ${index}`);
    await writeFile(join(dir, file), damage ? Buffer.from('damaged') : data);
    files.push({
      file,
      kind,
      backing: index === 0 ? null : files[index - 1].file,
      taken_at: at,
      vm_state: 'running',
      size_bytes: data.length,
      sha256: createHash('sha256').update(data).digest('hex'),
    });
  }
  await writeFile(
    join(dir, 'manifest.json'),
    JSON.stringify({
      format: MANIFEST_FORMAT,
      vm_id: vmId,
      node_id: 'node-gone',
      chain_id: chainId,
      vm: {
        vm_id: vmId,
        vm_type: 'web',
        tenant_id: 'acme',
        ram_alloc_mb: 256,
        vcpu_count: 1,
        host_ports: [],
        forwards: [
          { host_port: 40022, guest_port: 22, protocol: 'tcp' },
          { host_port: 48080, guest_port: 80, protocol: 'tcp' },
        ],
        disk_gb: 8,
      },
      create_request: {},
      hypervisor: { qemu_img: 'qemu-img', machine: 'q35', disk_virtual_size_bytes: null },
      files,
      restore: '',
    }),
  );
}

function restoreRequest(fields: Partial<AgentRestoreRequest> = {}): AgentRestoreRequest {
  return {
    vm_id: VM,
    vm_type: 'web',
    ram_mb: 256,
    vcpu_count: 1,
    tenant_id: 'acme',
    ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
    keep_host_ports: true,
    source: { backup_id: `${CHAIN}/0001` },
    ...fields,
  };
}

describe('VmRestoresService', () => {
  let bed: VmBed;
  let backupDir: string;
  let copier: FakeCopier;
  let restores: VmRestoresService;
  let services: Awaited<ReturnType<typeof vmServices>>;

  beforeEach(async () => {
    bed = await openVmBed('vm-restores-');
    backupDir = join(bed.root, '..', `${bed.root.split('/').pop()}-backups`);
    await mkdir(backupDir, { mode: 0o700 });
    const config = vmHostConfig({
      VM_NODE_ID: 'node-b',
      VM_DISK_DIR: bed.root,
      VM_BACKUP_DIR: backupDir,
    });
    services = await vmServices({
      files: bed.files,
      driver: bed.driver,
      clock: bed.clock,
      hostFacts: fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 }),
      config,
    });
    // Every port the test names is free here.
    copier = new FakeCopier();
    restores = new VmRestoresService(config, services.admission, copier);
  });

  afterEach(async () => {
    await closeVmBed(bed);
    await import('node:fs/promises').then(({ rm }) => rm(backupDir, { recursive: true }));
  });

  it('lists the replica and backup points of a VM not on this node, newest first, with its manifest', async () => {
    await chain(backupDir, CHAIN, ['2026-12-05T04:17:00.000Z', '2026-12-05T05:17:00.000Z']);
    await chain(join(bed.root, 'replicas'), OLDER_CHAIN, ['2026-12-05T05:30:00.000Z']);
    const points = await restores.points(VM);
    expect(points.points.map(({ source, backup_id }) => `${source} ${backup_id}`)).toEqual([
      `replica ${OLDER_CHAIN}/0000`,
      `backup ${CHAIN}/0001`,
      `backup ${CHAIN}/0000`,
    ]);
    expect(points.spec).toEqual({
      vm_type: 'web',
      ram_mb: 256,
      vcpu_count: 1,
      tenant_id: 'acme',
      ports: [
        { host_port: 40022, guest_port: 22, protocol: 'tcp' },
        { host_port: 48080, guest_port: 80, protocol: 'tcp' },
      ],
      disk_gb: 8,
    });
    expect(await restores.points('vm-0000000000000000')).toEqual({
      vm_id: 'vm-0000000000000000',
      points: [],
      spec: null,
    });
  });

  it('makes the VM with the same id from the chosen file: its disk whole, the sidecar without its intent, then started', async () => {
    await chain(backupDir, CHAIN, ['2026-12-05T04:17:00.000Z', '2026-12-05T05:17:00.000Z']);
    const restored = await restores.restore(restoreRequest({ copies: { count: 1, every_s: 90 } }));
    expect(restored.vm).toMatchObject({
      vm_id: VM,
      state: VmState.Provisioning,
      tenant_id: 'acme',
      host_ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
    });
    expect(restored.point).toMatchObject({ source: 'backup', backup_id: `${CHAIN}/0001` });
    expect(copier.converted).toEqual([join(backupDir, VM, CHAIN, '0001-incremental.qcow2')]);
    const disk = bed.files.disk(VM);
    expect(await readFile(disk, 'utf8')).toBe(`disk ${CHAIN} 1`);
    expect((await stat(disk)).mode & 0o777).toBe(0o600);
    expect(existsSync(bed.files.restoringDisk(VM))).toBe(false);
    const sidecar = await bed.files.readSidecar(VM);
    expect(sidecar).toMatchObject({ restored_from: expect.stringContaining(`${CHAIN}/0001`) });
    expect(sidecar?.restoring).toBeUndefined();
    // Its copy policy goes with it: the restored VM is copied again from its new node.
    expect(sidecar?.copies).toEqual({ count: 1, every_s: 90 });
    // The driver made its seed again over the restored disk, never a blank one.
    expect(bed.driver.filesMade).toEqual([
      expect.objectContaining({ vmId: VM, restoredDisk: true }),
    ]);
    expect(bed.driver.creates.map(({ spec }) => spec.vmId)).toEqual([VM]);
  });

  it('takes the newest file at or before `at`, and refuses with a 422 naming the field what it cannot find', async () => {
    await chain(backupDir, CHAIN, ['2026-12-05T04:17:00.000Z', '2026-12-05T05:17:00.000Z']);
    const at = await restores.restore(
      restoreRequest({ source: { backup_id: CHAIN, at: '2026-12-05T05:00:00Z' } }),
    );
    expect(at.point.backup_id).toBe(`${CHAIN}/0000`);
    const status = (error: Error) => new JsonErrorFilter(VMS_ERROR_STATUSES).body(error).statusCode;
    for (const [source, message] of [
      [{ backup_id: `${OLDER_CHAIN}/0000` }, /^source\.backup_id: no backup/],
      [{ replica: true }, /^source\.replica: this node holds no copy of vm/],
      [{ backup_id: CHAIN, at: '2026-01-01T00:00:00Z' }, /^source\.at: no backup/],
    ] as const) {
      const refused = await restores
        .restore(restoreRequest({ vm_id: 'vm-00000000000000d2', source: { ...source, vm_id: VM } }))
        .catch((error: Error) => error);
      expect((refused as Error).message).toMatch(message);
      expect(status(refused as Error)).toBe(422);
    }
    const both = await restores
      .restore(restoreRequest({ source: { replica: true, backup_id: CHAIN } }))
      .catch((error: Error) => error);
    expect(status(both as Error)).toBe(400);
  });

  it('refuses (409) a VM id this node has, and a damaged chain (422), leaving nothing behind', async () => {
    await chain(backupDir, CHAIN, ['2026-12-05T04:17:00.000Z']);
    await bed.leftBehind(VM, { started_at: '2026-12-05T04:00:00.000Z' });
    await expect(
      restores.restore(restoreRequest({ source: { backup_id: CHAIN } })),
    ).rejects.toThrow(`vm_id ${VM} is already taken on this node; no VM was made`);
    await chain(backupDir, OLDER_CHAIN, ['2026-12-04T04:17:00.000Z'], { damage: true });
    await expect(
      restores.restore(
        restoreRequest({
          vm_id: 'vm-00000000000000d3',
          source: { backup_id: OLDER_CHAIN, vm_id: VM },
        }),
      ),
    ).rejects.toThrow(/its file 0000-full\.qcow2 is not what its manifest says/);
    expect(await bed.runFolders()).toEqual([VM]);
    expect(await readdir(join(bed.root, 'disks'))).toEqual([]);
  });

  it("refuses (422) a restored disk larger than the VM's disk_gb, leaving nothing behind", async () => {
    await chain(backupDir, CHAIN, ['2026-12-05T04:17:00.000Z', '2026-12-05T05:17:00.000Z']);
    copier.virtualSizeBytes = 9 * 1024 ** 3;
    await expect(restores.restore(restoreRequest({ disk_gb: 8 }))).rejects.toThrow(
      /is 9\.0 GiB, more than the VM's 8\.0 GiB/,
    );
    expect(existsSync(bed.files.disk(VM))).toBe(false);
    expect(await bed.files.readSidecar(VM)).toBeUndefined();
    copier.virtualSizeBytes = 8 * 1024 ** 3;
    await expect(restores.restore(restoreRequest({ disk_gb: 8 }))).resolves.toMatchObject({
      vm: { vm_id: VM },
    });
  });

  it('rolls back at start-up a restore cut short before its disk was whole', async () => {
    await bed.leftBehind(VM, { restored_from: 'backup x', restoring: true });
    await writeFile(bed.files.restoringDisk(VM), 'half');
    await services.reconciliation.recover();
    await services.lifecycle.provisioned(VM);
    expect(await bed.runFolders()).toEqual([]);
    expect(existsSync(bed.files.restoringDisk(VM))).toBe(false);
    expect(bed.driver.creates).toEqual([]);
    expect(bed.logs).toContain(`warn vm ${VM}: restore rolled back, nothing of it left`);
  });

  it('sets a superseded VM aside: stopped, its disk and files moved, listed no more; other ids passed over', async () => {
    await bed.leftBehind(VM, { started_at: '2026-12-05T04:00:00.000Z' });
    await writeFile(bed.files.disk(VM), 'old disk');
    bed.driver.live.set(VM, {
      record: { kind: 'fake', pid: 7 },
      hostPorts: [],
      rssMb: 10,
      summary: 'fake pid 7',
    });
    await services.vms.supersede([VM, 'vm-not-here', '../../etc', 'a/b']);
    expect(bed.driver.stopped.map(({ vmId }) => vmId)).toEqual([VM]);
    expect(await bed.runFolders()).toEqual([]);
    const [aside] = await readdir(join(bed.root, 'superseded'));
    expect(aside).toMatch(new RegExp(`^${VM}-\\d{8}T\\d{6}Z$`));
    const dir = join(bed.root, 'superseded', aside);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect(await readFile(join(dir, `${VM}.qcow2`), 'utf8')).toBe('old disk');
    expect(existsSync(join(dir, 'run', 'vm.json'))).toBe(true);
    expect(await services.vms.list()).toEqual([]);
    expect(bed.logs.some((line) => line.startsWith(`warn vm ${VM}: superseded`))).toBe(true);
  });

  it('never sets aside a VM whose restore is under way here (the controller records its move once answered)', async () => {
    await bed.leftBehind(VM, {
      restoring: true,
      restored_from: 'replica 20261205T041700Z-3f2a/0000',
    });
    await writeFile(bed.files.disk(VM), 'disk being restored');
    await services.vms.supersede([VM]);
    expect(bed.driver.stopped).toEqual([]);
    expect(existsSync(join(bed.root, 'superseded'))).toBe(false);
    expect(await readFile(bed.files.disk(VM), 'utf8')).toBe('disk being restored');
  });
});
