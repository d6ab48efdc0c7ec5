import { Logger } from '@nestjs/common';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as si from 'systeminformation';
import { vmHostConfig } from '../../../../test/support/configs';
import { HostFactsPaths, HostFactsService } from './host-facts.service';

jest.mock('systeminformation', () => ({
  mem: jest.fn(),
  cpu: jest.fn(),
  currentLoad: jest.fn(),
}));

const mocked = si as jest.Mocked<typeof si>;
const MIB = 1024 * 1024;

describe('HostFactsService', () => {
  let warnings: string[];
  let root: string;
  let paths: HostFactsPaths;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'host-facts-'));
    paths = Object.assign(new HostFactsPaths(), {
      bootId: join(root, 'boot_id'),
      kvmDevice: join(root, 'kvm'),
    });
    await writeFile(paths.bootId, '3f1c2a4e-8b7d-4c6f-9e2a-1b0d5c7e9f31\n');
    mocked.mem.mockResolvedValue({
      total: 16384 * MIB,
      available: 12288 * MIB,
    } as si.Systeminformation.MemData);
    mocked.cpu.mockResolvedValue({ cores: 8 } as si.Systeminformation.CpuData);
    mocked.currentLoad.mockResolvedValue({
      currentLoad: 12.345,
    } as si.Systeminformation.CurrentLoadData);
    warnings = [];
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  it('reports RAM used as total minus available, in MiB, logical cores and load', async () => {
    const facts = await new HostFactsService(paths).read();
    expect(facts).toMatchObject({
      ram_total_mb: 16384,
      ram_used_mb: 4096,
      cpu_cores: 8,
      cpu_load_pct: 12.3,
    });
    expect(facts.hostname.length).toBeGreaterThan(0);
  });

  it("reports the kernel's boot_id, trimmed", async () => {
    expect((await new HostFactsService(paths).read()).boot_id).toBe(
      '3f1c2a4e-8b7d-4c6f-9e2a-1b0d5c7e9f31',
    );
  });

  it('reports unknown-boot, warning once, when boot_id is missing or not an id, and the id again once readable', async () => {
    const service = new HostFactsService(paths);
    await rm(paths.bootId);
    expect((await service.read()).boot_id).toBe('unknown-boot');
    await writeFile(paths.bootId, '../../etc/passwd\n');
    expect((await service.read()).boot_id).toBe('unknown-boot');
    expect(warnings).toEqual([
      expect.stringMatching(
        /^cannot read boot_id \(.*ENOENT.*\); reporting "unknown-boot" until it can$/,
      ),
    ]);
    await writeFile(paths.bootId, 'boot-2\n');
    expect((await service.read()).boot_id).toBe('boot-2');
  });

  it('reports KVM available only when the device may be opened read-write', async () => {
    const service = new HostFactsService(paths);
    expect((await service.read()).kvm_available).toBe(false);
    await writeFile(paths.kvmDevice, '');
    await chmod(paths.kvmDevice, 0o600);
    expect((await service.read()).kvm_available).toBe(true);
    expect(await service.kvmUsable()).toBe(true);
  });

  it('reports KVM unavailable once it failed at run time, saying why once with the node', async () => {
    await writeFile(paths.kvmDevice, '', { mode: 0o600 });
    const service = new HostFactsService(paths, vmHostConfig({ VM_NODE_ID: 'node-k' }));
    expect((await service.read()).kvm_available).toBe(true);
    service.kvmFailed('vm vm-1: QMP status internal-error under KVM');
    service.kvmFailed('vm vm-2: QMP status internal-error under KVM');
    expect((await service.read()).kvm_available).toBe(false);
    expect(await service.kvmDeviceUsable()).toBe(true);
    expect(service.kvmFailureReason()).toBe('vm vm-1: QMP status internal-error under KVM');
    expect(warnings).toEqual([
      'node node-k: KVM failed at run time: vm vm-1: QMP status internal-error under KVM; kvm_available is false until the agent restarts',
    ]);
  });

  it('reports KVM unavailable under VM_ACCEL=tcg, the device usable or not', async () => {
    await writeFile(paths.kvmDevice, '', { mode: 0o600 });
    const service = new HostFactsService(paths, vmHostConfig({ VM_ACCEL: 'tcg' }));
    expect((await service.read()).kvm_available).toBe(false);
  });

  it('degrades a fact it cannot read to a safe value, warning once, not every beat', async () => {
    mocked.mem.mockRejectedValue(new Error('/proc/meminfo unreadable'));
    mocked.currentLoad.mockResolvedValue({
      currentLoad: Number.NaN,
    } as si.Systeminformation.CurrentLoadData);
    const service = new HostFactsService(paths);
    const first = await service.read();
    await service.read();
    expect(first).toMatchObject({ ram_total_mb: 0, ram_used_mb: 0, cpu_load_pct: 0, cpu_cores: 8 });
    expect(warnings).toEqual([
      'cannot read ram (/proc/meminfo unreadable); reporting {"total":0,"used":0} until it can',
      'cannot read cpu_load_pct (load is not a number); reporting 0 until it can',
    ]);
  });
});

describe('HostFactsPaths.forConfig', () => {
  let warnings: string[];

  beforeEach(() => {
    warnings = [];
    jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation((message: unknown) => void warnings.push(String(message)));
  });

  afterEach(() => jest.restoreAllMocks());

  it("is the kernel's paths, silently, unless VM_HOST_KVM_DEVICE is set", () => {
    const paths = HostFactsPaths.forConfig(vmHostConfig({ VM_NODE_ID: 'node-a' }));
    expect(paths).toEqual(new HostFactsPaths());
    expect(paths.kvmDevice).toBe('/dev/kvm');
    expect(warnings).toEqual([]);
  });

  it('reads KVM from the file VM_HOST_KVM_DEVICE names, for the heartbeat and the driver alike, warning at start-up', async () => {
    const root = await mkdtemp(join(tmpdir(), 'host-facts-'));
    try {
      const kvmDevice = join(root, 'kvm');
      const paths = HostFactsPaths.forConfig(
        vmHostConfig({ VM_NODE_ID: 'node-a', VM_HOST_KVM_DEVICE: kvmDevice }),
      );
      expect(paths.kvmDevice).toBe(kvmDevice);
      expect(warnings).toEqual([
        `node node-a: test-only hook VM_HOST_KVM_DEVICE=${kvmDevice} is set: KVM is judged usable by that file, not /dev/kvm`,
      ]);
      const service = new HostFactsService(paths);
      expect(await service.kvmUsable()).toBe(false);
      await writeFile(kvmDevice, '', { mode: 0o600 });
      expect(await service.kvmUsable()).toBe(true);
      jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
      expect((await service.read()).kvm_available).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
