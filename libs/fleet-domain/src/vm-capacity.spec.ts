import {
  HYPERVISOR_OVERHEAD_MB,
  TCG_OVERHEAD_MB,
  TCG_TRANSLATION_CACHE_MB,
  capacityRefusal,
  committedRamMb,
} from './vm-capacity';

const host = { totalMb: 24_576, usedMb: 3_000 };

describe('committedRamMb', () => {
  it('is the sampled use when there are no VMs', () => {
    expect(committedRamMb(host, [])).toBe(3_000);
  });

  it('counts every VM with the RAM it was given, used or not, plus the hypervisor overhead', () => {
    // Two idle guests: their QEMU processes hold 50 and 70 MB of the 3120 MB sampled.
    const sampled = { totalMb: 24_576, usedMb: 3_120 };
    const vms = [
      { ramAllocMb: 8_192, vcpuCount: 2, rssMb: 50 },
      { ramAllocMb: 4_096, vcpuCount: 1, rssMb: 70 },
    ];
    expect(committedRamMb(sampled, vms)).toBe(3_000 + 8_192 + 4_096 + 2 * HYPERVISOR_OVERHEAD_MB);
  });

  it('does not count a guest twice once it touched its memory', () => {
    const idle = committedRamMb({ totalMb: 24_576, usedMb: 3_050 }, [
      { ramAllocMb: 8_192, vcpuCount: 2, rssMb: 50 },
    ]);
    const busy = committedRamMb({ totalMb: 24_576, usedMb: 11_300 }, [
      { ramAllocMb: 8_192, vcpuCount: 2, rssMb: 8_300 },
    ]);
    expect(busy).toBe(idle);
  });

  it('never counts the host below 0 when guests hold more than was sampled', () => {
    expect(
      committedRamMb({ totalMb: 8_192, usedMb: 100 }, [
        { ramAllocMb: 1_024, vcpuCount: 1, rssMb: 900 },
      ]),
    ).toBe(1_024 + HYPERVISOR_OVERHEAD_MB);
  });

  it("counts a VM's own overhead when it has one: TCG's includes its translation cache", () => {
    expect(TCG_OVERHEAD_MB).toBe(HYPERVISOR_OVERHEAD_MB + TCG_TRANSLATION_CACHE_MB);
    const vms = [
      { ramAllocMb: 512, vcpuCount: 1, rssMb: 0, overheadMb: TCG_OVERHEAD_MB },
      { ramAllocMb: 512, vcpuCount: 1, rssMb: 0 },
    ];
    expect(committedRamMb(host, vms)).toBe(
      3_000 + 1_024 + TCG_OVERHEAD_MB + HYPERVISOR_OVERHEAD_MB,
    );
    // A TCG VM that would fit with KVM's overhead alone does not.
    const node = { memory: host, cpuCores: 8, vcpuOvercommit: 4 };
    const room = 24_576 - 3_000 - 512 - (512 + HYPERVISOR_OVERHEAD_MB);
    expect(capacityRefusal({ ramMb: room, vcpuCount: 1 }, node, [vms[1]])).toBeUndefined();
    expect(capacityRefusal({ ramMb: room, vcpuCount: 1 }, node, [vms[0]])).toContain('ram_mb');
  });

  it('takes the overhead per VM as given', () => {
    expect(committedRamMb(host, [{ ramAllocMb: 100, vcpuCount: 1, rssMb: 0 }], 10)).toBe(3_110);
  });
});

describe('capacityRefusal', () => {
  const node = { memory: host, cpuCores: 8, vcpuOvercommit: 4 };

  it('lets a VM fit up to total - committed - 512 MB', () => {
    const committable = 24_576 - 3_000 - 512;
    expect(capacityRefusal({ ramMb: committable, vcpuCount: 1 }, node, [])).toBeUndefined();
    expect(capacityRefusal({ ramMb: committable + 1, vcpuCount: 1 }, node, [])).toBe(
      `ram_mb: ${committable + 1} MB does not fit on this node: ${committable} MB committable of 24576 MB (margin 512 MB)`,
    );
  });

  it('refuses 1 TiB naming ram_mb and the numbers', () => {
    expect(capacityRefusal({ ramMb: 1_048_576, vcpuCount: 1 }, node, [])).toBe(
      'ram_mb: 1048576 MB does not fit on this node: 21064 MB committable of 24576 MB (margin 512 MB)',
    );
  });

  it('counts the committed VMs against both RAM and vCPUs', () => {
    const vms = [{ ramAllocMb: 20_000, vcpuCount: 30, rssMb: 0 }];
    expect(capacityRefusal({ ramMb: 1_024, vcpuCount: 3 }, node, vms)).toBe(
      'ram_mb: 1024 MB does not fit on this node: 808 MB committable of 24576 MB (margin 512 MB); ' +
        'vcpu_count: 3 vCPUs do not fit on this node: 2 committable of 32 (8 cores x VM_VCPU_OVERCOMMIT 4)',
    );
    expect(capacityRefusal({ ramMb: 800, vcpuCount: 2 }, node, vms)).toBeUndefined();
  });

  it('rounds a fractional overcommit down to whole vCPUs', () => {
    const tight = { ...node, cpuCores: 3, vcpuOvercommit: 1.5 };
    expect(capacityRefusal({ ramMb: 64, vcpuCount: 4 }, tight, [])).toBeUndefined();
    expect(capacityRefusal({ ramMb: 64, vcpuCount: 5 }, tight, [])).toBe(
      'vcpu_count: 5 vCPUs do not fit on this node: 4 committable of 4 (3 cores x VM_VCPU_OVERCOMMIT 1.5)',
    );
  });

  it('refuses everything when the host memory could not be read (total 0)', () => {
    expect(
      capacityRefusal(
        { ramMb: 64, vcpuCount: 1 },
        { ...node, memory: { totalMb: 0, usedMb: 0 } },
        [],
      ),
    ).toBe('ram_mb: 64 MB does not fit on this node: 0 MB committable of 0 MB (margin 512 MB)');
  });
});
