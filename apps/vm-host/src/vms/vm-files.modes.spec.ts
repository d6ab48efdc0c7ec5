import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VmHostConfig } from '../config/vm-host.config';
import { VmFiles, VmSidecar } from './vm-files';

async function mode(path: string): Promise<string> {
  return ((await stat(path)).mode & 0o777).toString(8);
}

describe('VmFiles keeps VM files private', () => {
  let root: string;
  let files: VmFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vm-files-modes-'));
    files = new VmFiles(Object.assign(new VmHostConfig(), { diskDir: join(root, 'vms') }));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  function sidecar(vmId: string): VmSidecar {
    return {
      vm_id: vmId,
      vm_type: 'web',
      tenant_id: null,
      ram_alloc_mb: 64,
      vcpu_count: 1,
      host_ports: [],
      created_at: '2026-08-06T12:00:00.000Z',
      started_at: null,
      error: null,
      driver: { kind: 'qemu', accel: 'tcg', pid: null },
      idempotency_key: null,
    };
  }

  it('makes its folders 0700 and sidecars 0600', async () => {
    await files.prepare();
    for (const dir of ['', 'disks', 'run', 'base'])
      expect(await mode(join(files.root, dir))).toBe('700');
    const vmId = await files.newVmId();
    await files.writeSidecar(sidecar(vmId));
    expect(await mode(files.runDir(vmId))).toBe('700');
    expect(await mode(join(files.runDir(vmId), 'vm.json'))).toBe('600');
  });

  it('takes away what older agents left readable to all', async () => {
    const vmId = 'vm-00000000000000aa';
    await mkdir(join(files.root, 'disks'), { recursive: true, mode: 0o755 });
    await mkdir(files.runDir(vmId), { recursive: true, mode: 0o755 });
    await chmod(join(files.root, 'disks'), 0o755);
    await chmod(files.runDir(vmId), 0o755);
    await writeFile(files.disk(vmId), 'disk', { mode: 0o644 });
    await writeFile(join(files.runDir(vmId), 'seed.iso'), 'iso', { mode: 0o644 });
    await files.prepare();
    expect(await mode(join(files.root, 'disks'))).toBe('700');
    expect(await mode(files.runDir(vmId))).toBe('700');
    expect(await mode(files.disk(vmId))).toBe('600');
    expect(await mode(join(files.runDir(vmId), 'seed.iso'))).toBe('600');
  });

  it('removes all of a VM that was never accepted: run folder and disk', async () => {
    await files.prepare();
    const vmId = await files.newVmId();
    await writeFile(files.disk(vmId), 'partial');
    await files.removeAll(vmId);
    await expect(stat(files.runDir(vmId))).rejects.toThrow('ENOENT');
    await expect(stat(files.disk(vmId))).rejects.toThrow('ENOENT');
  });
});
