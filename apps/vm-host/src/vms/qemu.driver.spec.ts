import { Logger } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsPaths, HostFactsService } from '../host-facts/host-facts.service';
import { ProcessTable } from '../host-facts/process-table';
import { CrashFailpoint } from './crash-failpoint';
import { QemuDriver, cloudInitUserData, qemuArgs } from './qemu.driver';
import { BaseImageMissingError, VmCreateError } from './vms.errors';
import { VmFiles } from './vm-files';

const launch = {
  vmId: 'vm-0123456789abcdef',
  ramMb: 128,
  vcpuCount: 2,
  accel: 'tcg' as const,
  disk: '/var/lib/vm-fleet/disks/vm-0123456789abcdef.qcow2',
  seedIso: '/var/lib/vm-fleet/run/vm-0123456789abcdef/seed.iso',
  qmpSocket: '/var/lib/vm-fleet/run/vm-0123456789abcdef/qmp.sock',
  pidFile: '/var/lib/vm-fleet/run/vm-0123456789abcdef/qemu.pid',
  serialLog: '/var/lib/vm-fleet/run/vm-0123456789abcdef/serial.log',
  sshHost: '10.8.0.21',
  sshPort: 40022,
};

function option(args: string[], flag: string): string[] {
  return args.flatMap((arg, index) => (arg === flag ? [args[index + 1]] : []));
}

describe('qemuArgs', () => {
  it('sizes the VM from the request and daemonizes with a pidfile and a QMP socket', () => {
    const args = qemuArgs(launch);
    expect(option(args, '-m')).toEqual(['128M']);
    expect(option(args, '-smp')).toEqual(['2']);
    expect(option(args, '-pidfile')).toEqual([launch.pidFile]);
    expect(option(args, '-qmp')).toEqual([`unix:${launch.qmpSocket},server=on,wait=off`]);
    expect(args).toContain('-daemonize');
  });

  it('uses TCG unless KVM was asked for and usable', () => {
    expect(option(qemuArgs(launch), '-machine')).toEqual(['q35,accel=tcg']);
    expect(option(qemuArgs(launch), '-cpu')).toEqual([]);
    const kvm = qemuArgs({ ...launch, accel: 'kvm' });
    expect(option(kvm, '-machine')).toEqual(['q35,accel=kvm']);
    expect(option(kvm, '-cpu')).toEqual(['host']);
  });

  it('forwards SSH on the node address and the checked port', () => {
    expect(option(qemuArgs(launch), '-netdev')).toEqual([
      'user,id=net0,hostfwd=tcp:10.8.0.21:40022-:22',
    ]);
    expect(option(qemuArgs({ ...launch, sshHost: 'fd00::21' }), '-netdev')).toEqual([
      'user,id=net0,hostfwd=tcp:[fd00::21]:40022-:22',
    ]);
  });

  it('doubles commas in paths, so a folder name cannot add QEMU options', () => {
    const args = qemuArgs({ ...launch, disk: '/srv/a,file=/etc/shadow/x.qcow2' });
    expect(option(args, '-drive')[0]).toBe(
      'if=virtio,format=qcow2,file=/srv/a,,file=/etc/shadow/x.qcow2',
    );
  });
});

describe('cloudInitUserData', () => {
  it('sets the hostname and, when given, the SSH key, as data that cannot break out of its field', () => {
    const text = cloudInitUserData('web-1', 'ssh-ed25519 AAAAC3Nz operator@example');
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    expect(JSON.parse(text.slice('#cloud-config\n'.length))).toEqual({
      hostname: 'web-1',
      preserve_hostname: false,
      ssh_authorized_keys: ['ssh-ed25519 AAAAC3Nz operator@example'],
    });
    expect(JSON.parse(cloudInitUserData('web-1').slice(14))).not.toHaveProperty(
      'ssh_authorized_keys',
    );
  });
});

describe('QemuDriver', () => {
  let root: string;
  let kvmDevice: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-driver-'));
    kvmDevice = join(root, 'kvm');
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  function driver(baseImage?: string, diskDir = root): QemuDriver {
    const config = Object.assign(new VmHostConfig(), { diskDir, baseImage, wgIp: '127.0.0.1' });
    const paths = Object.assign(new HostFactsPaths(), { kvmDevice });
    return new QemuDriver(
      config,
      new VmFiles(config),
      new HostFactsService(paths),
      new ProcessTable(paths),
      new CrashFailpoint(config),
    );
  }

  async function preparedFiles(): Promise<VmFiles> {
    const files = new VmFiles(Object.assign(new VmHostConfig(), { diskDir: root }));
    await files.prepare();
    return files;
  }

  it('makes one blank qcow2 base image when VM_BASE_IMAGE is unset, even for concurrent first creates', async () => {
    const qemu = driver();
    await preparedFiles();
    const images = await Promise.all([qemu.baseImage(), qemu.baseImage(), qemu.baseImage()]);
    expect(new Set(images)).toEqual(new Set([join(root, 'base', 'blank.qcow2')]));
    const info = JSON.parse(
      execFileSync('qemu-img', ['info', '--output=json', images[0]]).toString(),
    ) as {
      format: string;
    };
    expect(info.format).toBe('qcow2');
    expect(await readdir(join(root, 'base'))).toEqual(['blank.qcow2']);
  });

  it('refuses to plan a VM when VM_BASE_IMAGE does not exist, naming it', async () => {
    await expect(driver(join(root, 'nope.qcow2')).plan({ preferKvm: false })).rejects.toThrow(
      new BaseImageMissingError(
        `VM_BASE_IMAGE ${join(root, 'nope.qcow2')} does not exist or is not readable`,
      ),
    );
  });

  it('plans KVM only when asked for and /dev/kvm is usable, else TCG', async () => {
    const base = join(root, 'base.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', base, '1M']);
    const qemu = driver(base);
    expect(await qemu.plan({ preferKvm: true })).toEqual({
      record: { kind: 'qemu', accel: 'tcg', pid: null },
      summary: 'tcg',
    });
    await writeFile(kvmDevice, '');
    expect((await qemu.plan({ preferKvm: false })).summary).toBe('tcg');
    expect(await qemu.plan({ preferKvm: true })).toEqual({
      record: { kind: 'qemu', accel: 'kvm', pid: null },
      summary: 'kvm',
    });
  });

  it('fails making the files at the disk step when the base image is not a qcow2 image', async () => {
    const files = await preparedFiles();
    const notAnImage = join(root, 'not-an-image.qcow2');
    await writeFile(notAnImage, 'this is not a qcow2 image\n');
    const vmId = await files.newVmId();
    const failure = driver(notAnImage)
      .makeFiles({ vmId, vmType: 'web', ramMb: 64, vcpuCount: 1 })
      .catch((error: unknown) => error);
    const error = await failure;
    expect(error).toBeInstanceOf(VmCreateError);
    expect(error).toMatchObject({
      step: 'disk',
      message: expect.stringMatching(/^qemu-img failed: /),
    });
    expect(await readdir(files.runDir(vmId))).toEqual([]);
  });

  it('refuses a VM_DISK_DIR under which QMP socket paths would be too long', () => {
    expect(() => driver(undefined, `/${'d'.repeat(60)}`).checkDiskDir()).not.toThrow();
    expect(() => driver(undefined, `/${'d'.repeat(80)}`).checkDiskDir()).toThrow(
      'too long: QMP socket paths under it would exceed 107 bytes',
    );
  });

  it('sees a VM whose pid is missing, or is not its QEMU, as stopped, and stopping it signals nothing', async () => {
    const kill = jest.spyOn(process, 'kill');
    const qemu = driver();
    const vmId = 'vm-0123456789abcdef';
    for (const record of [
      { kind: 'qemu', accel: 'tcg', pid: null },
      { kind: 'qemu', accel: 'tcg', pid: process.pid },
      { kind: 'qemu', accel: 'tcg', pid: '1; rm -rf /' },
      { kind: 'firecracker', pid: process.pid },
    ]) {
      expect(await qemu.inspect(vmId, record)).toBe('stopped');
      await qemu.stop(vmId, record);
    }
    expect(kill).not.toHaveBeenCalled();
  });
});
