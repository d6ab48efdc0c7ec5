import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { VmFiles } from './vm-files';

describe('VmFiles', () => {
  let root: string;
  let files: VmFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vm-files-'));
    files = new VmFiles(Object.assign(new VmHostConfig(), { diskDir: root }));
    await files.prepare();
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('hands out distinct, file-name-safe vm ids for many creates at once', async () => {
    const ids = await Promise.all(Array.from({ length: 500 }, () => files.newVmId()));
    expect(new Set(ids).size).toBe(500);
    for (const id of ids) {
      expect(id).toMatch(/^vm-[0-9a-f]{16}$/);
      expect(id).toMatch(ID_PATTERN);
    }
    expect((await readdir(join(root, 'run'))).length).toBe(500);
    expect(await files.listVmIds()).toEqual([...ids].sort());
  });

  it('keeps every path of a VM inside VM_DISK_DIR', async () => {
    const id = await files.newVmId();
    for (const path of [
      files.disk(id),
      files.runDir(id),
      files.qmpSocket(id),
      files.pidFile(id),
      files.seedIso(id),
    ]) {
      expect(path.startsWith(`${root}/`)).toBe(true);
    }
  });

  it('round-trips the sidecar and removes the runtime files but not the disk folder', async () => {
    const id = await files.newVmId();
    const sidecar = {
      vm_id: id,
      vm_type: 'web',
      tenant_id: 'acme',
      ram_alloc_mb: 64,
      vcpu_count: 1,
      host_ports: [],
      accel: 'tcg' as const,
      created_at: '2026-08-06T12:00:00.000Z',
      started_at: null,
      pid: null,
      error: null,
    };
    await files.writeSidecar(sidecar);
    expect(await files.readSidecar(id)).toEqual(sidecar);
    await files.removeRuntime(id);
    expect(await files.readSidecar(id)).toBeUndefined();
    expect(await files.listVmIds()).toEqual([]);
    expect(await readdir(root)).toEqual(expect.arrayContaining(['disks', 'run', 'base']));
  });
});
