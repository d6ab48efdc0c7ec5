import { Logger } from '@nestjs/common';
import * as si from 'systeminformation';
import { HostFactsService } from './host-facts.service';

jest.mock('systeminformation', () => ({
  mem: jest.fn(),
  cpu: jest.fn(),
  currentLoad: jest.fn(),
}));

const mocked = si as jest.Mocked<typeof si>;
const MIB = 1024 * 1024;

describe('HostFactsService', () => {
  let warnings: string[];

  beforeEach(() => {
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

  afterEach(() => jest.restoreAllMocks());

  it('reports RAM used as total minus available, in MiB, logical cores and load', async () => {
    const facts = await new HostFactsService().read();
    expect(facts).toMatchObject({
      ram_total_mb: 16384,
      ram_used_mb: 4096,
      cpu_cores: 8,
      cpu_load_pct: 12.3,
    });
    expect(facts.boot_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof facts.kvm_available).toBe('boolean');
    expect(facts.hostname.length).toBeGreaterThan(0);
  });

  it('degrades a fact it cannot read to a safe value, warning once, not every beat', async () => {
    mocked.mem.mockRejectedValue(new Error('/proc/meminfo unreadable'));
    mocked.currentLoad.mockResolvedValue({
      currentLoad: Number.NaN,
    } as si.Systeminformation.CurrentLoadData);
    const service = new HostFactsService();
    const first = await service.read();
    await service.read();
    expect(first).toMatchObject({ ram_total_mb: 0, ram_used_mb: 0, cpu_load_pct: 0, cpu_cores: 8 });
    expect(warnings).toEqual([
      'cannot read ram (/proc/meminfo unreadable); reporting {"total":0,"used":0} until it can',
      'cannot read cpu_load_pct (load is not a number); reporting 0 until it can',
    ]);
  });
});
