import { chmod, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ID_PATTERN } from '@app/fleet-domain';
import { vmSidecar } from '../../../../../test/factories/vm-sidecar.factory';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmFiles } from './vm-files';
import { VmSidecar } from './vm-sidecar';
import { SidecarUnreadableError } from '../vms.errors';

describe('VmFiles', () => {
  let root: string;
  let files: VmFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vm-files-'));
    files = new VmFiles(vmHostConfig({ VM_DISK_DIR: root }));
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

  it('lists deleted disks by their own names, and leaves symlinks and folders in deleted/ alone', async () => {
    const deleted = join(root, 'deleted');
    await writeFile(join(deleted, '0001.vm-00000000000000a1.qcow2'), '');
    await writeFile(join(deleted, '5.vm-00000000000000a2.qcow2'), '');
    // A symlink pointing out of VM_DISK_DIR, and a folder: neither is a disk the agent made.
    const outside = join(root, 'outside.qcow2');
    await writeFile(outside, '');
    await symlink(outside, join(deleted, '1.vm-00000000000000b1.qcow2'));
    await mkdir(join(deleted, '2.vm-00000000000000b2.qcow2'));
    const listed = await files.listDeletedDisks();
    expect(listed.sort((a, b) => a.deletedAtMs - b.deletedAtMs)).toEqual([
      {
        vmId: 'vm-00000000000000a1',
        deletedAtMs: 1,
        path: join(deleted, '0001.vm-00000000000000a1.qcow2'),
      },
      {
        vmId: 'vm-00000000000000a2',
        deletedAtMs: 5,
        path: join(deleted, '5.vm-00000000000000a2.qcow2'),
      },
    ]);
  });

  it('keeps every path of a VM inside VM_DISK_DIR', async () => {
    const id = await files.newVmId();
    for (const path of [files.disk(id), files.runDir(id), files.blankBaseImage()]) {
      expect(path.startsWith(`${root}/`)).toBe(true);
    }
  });

  it('round-trips the sidecar and removes the runtime files but not the disk folder', async () => {
    const id = await files.newVmId();
    const sidecar = vmSidecar({
      vm_id: id,
      tenant_id: 'acme',
      ram_alloc_mb: 64,
      vcpu_count: 1,
      created_at: '2026-08-06T12:00:00.000Z',
      driver: { kind: 'qemu', accel: 'tcg', pid: null },
    });
    await files.writeSidecar(sidecar);
    expect(await files.readSidecar(id)).toEqual(sidecar);
    await files.removeRuntime(id);
    expect(await files.readSidecar(id)).toBeUndefined();
    expect(await files.listVmIds()).toEqual([]);
    expect(await readdir(root)).toEqual(
      expect.arrayContaining(['disks', 'run', 'deleted', 'base']),
    );
  });

  it('reads a sidecar written before drivers (pid and accel at the top) as a QEMU one', async () => {
    const id = await files.newVmId();
    const written = {
      vm_id: id,
      vm_type: 'web',
      tenant_id: null,
      ram_alloc_mb: 96,
      vcpu_count: 1,
      host_ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
      accel: 'kvm',
      created_at: '2026-08-06T12:00:00.000Z',
      started_at: '2026-08-06T12:00:01.000Z',
      pid: 4242,
      error: null,
    };
    await writeFile(join(files.runDir(id), 'vm.json'), JSON.stringify(written));
    const { accel: _accel, pid: _pid, ...common } = written;
    expect(await files.readSidecar(id)).toEqual({
      ...common,
      driver: { kind: 'qemu', accel: 'kvm', pid: 4242 },
      idempotency_key: null,
      // Written before desired states: a VM that should run, as every VM did then.
      desired_state: 'running',
      last_exit: null,
    });
  });

  it('reads a missing sidecar as none, but refuses one it cannot read or that is damaged', async () => {
    const id = await files.newVmId();
    expect(await files.readSidecar(id)).toBeUndefined();
    const sidecar = join(files.runDir(id), 'vm.json');
    const unreadable = async (reason: string): Promise<void> => {
      const read = files.readSidecar(id);
      await expect(read).rejects.toBeInstanceOf(SidecarUnreadableError);
      await expect(read).rejects.toThrow(`vm ${id}: sidecar unreadable (${reason})`);
    };
    await mkdir(sidecar);
    await unreadable('EISDIR');
    await rm(sidecar, { recursive: true });
    await writeFile(sidecar, '{"vm_id": "' + id);
    await unreadable('not JSON');
    await writeFile(sidecar, JSON.stringify({ vm_id: 'vm-someone-else', vm_type: 'web' }));
    await unreadable(`not a sidecar of vm ${id}`);
    await writeFile(sidecar, 'null');
    await unreadable(`not a sidecar of vm ${id}`);
  });
});

async function mode(path: string): Promise<string> {
  return ((await stat(path)).mode & 0o777).toString(8);
}

describe('VmFiles keeps VM files private', () => {
  let root: string;
  let files: VmFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vm-files-modes-'));
    files = new VmFiles(vmHostConfig({ VM_DISK_DIR: join(root, 'vms') }));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  function sidecar(vmId: string): VmSidecar {
    return vmSidecar({
      vm_id: vmId,
      ram_alloc_mb: 64,
      vcpu_count: 1,
      created_at: '2026-08-06T12:00:00.000Z',
      driver: { kind: 'qemu', accel: 'tcg', pid: null },
    });
  }

  it('makes its folders 0700 and sidecars 0600', async () => {
    await files.prepare();
    for (const dir of ['', 'disks', 'run', 'deleted', 'base'])
      expect(await mode(join(files.root, dir))).toBe('700');
    const vmId = await files.newVmId();
    await files.writeSidecar(sidecar(vmId));
    expect(await mode(files.runDir(vmId))).toBe('700');
    expect(await mode(join(files.runDir(vmId), 'vm.json'))).toBe('600');
  });

  it('takes away what older agents (and QEMU) left readable to others: files and sockets', async () => {
    const vmId = 'vm-00000000000000aa';
    await mkdir(join(files.root, 'disks'), { recursive: true, mode: 0o755 });
    await mkdir(files.runDir(vmId), { recursive: true, mode: 0o755 });
    await chmod(join(files.root, 'disks'), 0o755);
    await chmod(files.runDir(vmId), 0o755);
    await writeFile(files.disk(vmId), 'disk', { mode: 0o644 });
    await writeFile(join(files.runDir(vmId), 'seed.iso'), 'iso', { mode: 0o644 });
    await writeFile(join(files.runDir(vmId), 'serial.log'), 'boot', { mode: 0o640 });
    await chmod(join(files.runDir(vmId), 'serial.log'), 0o640);
    // A QMP socket as QEMU -daemonize leaves it: 0750.
    const qmp = createServer();
    const socket = join(files.runDir(vmId), 'qmp.sock');
    await new Promise<void>((resolve) => qmp.listen(socket, resolve));
    try {
      await chmod(socket, 0o750);
      await files.prepare();
      expect(await mode(socket)).toBe('600');
    } finally {
      await new Promise((resolve) => qmp.close(resolve));
    }
    expect(await mode(join(files.root, 'disks'))).toBe('700');
    expect(await mode(files.runDir(vmId))).toBe('700');
    expect(await mode(files.disk(vmId))).toBe('600');
    expect(await mode(join(files.runDir(vmId), 'seed.iso'))).toBe('600');
    expect(await mode(join(files.runDir(vmId), 'serial.log'))).toBe('600');
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
