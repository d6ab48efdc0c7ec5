import { createRequest } from '../../../../../test/factories/create-request.factory';
import { mkdir, readdir, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import {
  VmBed,
  VmServices,
  closeVmBed,
  openVmBed,
  vmServices,
} from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import { DeletedDisksJob } from './deleted-disks.job';

const HOUR_MS = 3_600_000;
const YEAR_MS = 365 * 24 * HOUR_MS;

/** A host with room for every VM these tests make. */
const roomyHost = fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 });

describe('DeletedDisks', () => {
  let bed: VmBed;

  beforeEach(async () => {
    bed = await openVmBed('deleted-disks-');
  });

  afterEach(() => closeVmBed(bed));

  function services(diskRetentionS: number): Promise<VmServices> {
    const config = vmHostConfig({
      VM_NODE_ID: 'node-a',
      VM_VCPU_OVERCOMMIT: '4',
      VM_DISK_RETENTION_S: String(diskRetentionS),
    });
    const { files, driver, clock } = bed;
    return vmServices({ files, driver, clock, hostFacts: roomyHost, config });
  }

  /** A started VM with a disk, as QEMU's driver leaves it. */
  async function runningVm({ vms }: VmServices): Promise<string> {
    const {
      vm: { vm_id: vmId },
    } = await vms.spawn(createRequest({ vcpu_count: 1 }));
    const settled = firstValueFrom(vms.changes);
    bed.driver.creates.shift()!.settle({
      record: { kind: 'fake', pid: 4242 },
      hostPorts: [],
      summary: 'fake pid 4242',
    });
    await settled;
    await writeFile(bed.files.disk(vmId), 'qcow2');
    return vmId;
  }

  const listed = (dir: string): Promise<string[]> => readdir(join(bed.root, dir));

  it('with retention 0, removes the disk with the VM', async () => {
    const vm = await services(0);
    const vmId = await runningVm(vm);
    await vm.vms.destroy(vmId);
    expect(await listed('run')).toEqual([]);
    expect(await listed('disks')).toEqual([]);
    expect(await listed('deleted')).toEqual([]);
    expect(bed.logs).toContain(`log vm ${vmId} destroyed (disk removed)`);
  });

  it('keeps the disk, stamped with the deletion time, until the retention has passed', async () => {
    const vm = await services(3_600);
    const vmId = await runningVm(vm);
    const deletedAt = bed.clock.wallNow();
    await vm.vms.destroy(vmId);
    expect(await listed('run')).toEqual([]);
    expect(await listed('disks')).toEqual([]);
    expect(await listed('deleted')).toEqual([`${deletedAt}.${vmId}.qcow2`]);

    bed.clock.advance(HOUR_MS - 1);
    expect(await vm.deletedDisks.sweep()).toBe(0);
    expect(await listed('deleted')).toHaveLength(1);

    bed.clock.advance(1);
    await new DeletedDisksJob(vm.deletedDisks).sweep();
    expect(await listed('deleted')).toEqual([]);
  });

  it("goes by the agent's own clock: a wall clock stepped forward removes nothing early", async () => {
    const vm = await services(3_600);
    const vmId = await runningVm(vm);
    await vm.vms.destroy(vmId);
    bed.clock.stepWall(YEAR_MS);
    expect(await vm.deletedDisks.sweep()).toBe(0);
    bed.clock.advance(HOUR_MS);
    expect(await vm.deletedDisks.sweep()).toBe(1);
  });

  it('keeps a disk deleted while the clock was a year behind its full retention once the clock is corrected', async () => {
    const vm = await services(3_600);
    const vmId = await runningVm(vm);
    bed.clock.stepWall(-YEAR_MS);
    await vm.vms.destroy(vmId);
    bed.clock.advance(6_000);
    bed.clock.stepWall(YEAR_MS);
    expect(await vm.deletedDisks.sweep()).toBe(0);
    bed.clock.advance(HOUR_MS - 6_001);
    expect(await vm.deletedDisks.sweep()).toBe(0);
    expect(await listed('deleted')).toHaveLength(1);
    bed.clock.advance(1);
    expect(await vm.deletedDisks.sweep()).toBe(1);
  });

  it.each([
    ['the future', YEAR_MS],
    ['the far past', -YEAR_MS],
  ])(
    'gives a disk of an earlier run stamped in %s its full retention from first sight',
    async (_when, offsetMs) => {
      const stamp = bed.clock.wallNow() + offsetMs;
      await writeFile(join(bed.root, 'deleted', `${stamp}.vm-00000000000000d1.qcow2`), '');
      const vm = await services(3_600);
      expect(await vm.deletedDisks.sweep()).toBe(0);
      bed.clock.advance(HOUR_MS - 1);
      expect(await vm.deletedDisks.sweep()).toBe(0);
      bed.clock.advance(1);
      expect(await vm.deletedDisks.sweep()).toBe(1);
    },
  );

  it('never removes a deleted disk a process of its VM still runs on', async () => {
    const vm = await services(3_600);
    await writeFile(
      join(bed.root, 'deleted', `${bed.clock.wallNow() - 2 * HOUR_MS}.vm-00000000000000e1.qcow2`),
      '',
    );
    bed.driver.live.set('vm-00000000000000e1', {
      record: { kind: 'fake', pid: 78 },
      hostPorts: [],
      rssMb: 40,
      summary: 'fake pid 78',
    });
    expect(await vm.deletedDisks.sweep()).toBe(0);
    expect(await listed('deleted')).toHaveLength(1);
    bed.driver.live.delete('vm-00000000000000e1');
    expect(await vm.deletedDisks.sweep()).toBe(1);
  });

  it('at start-up, retires disks left without a run folder and sweeps those past retention', async () => {
    const vm = await services(3_600);
    const nowMs = bed.clock.wallNow();
    const nowS = nowMs / 1000;
    const disk = (vmId: string): string => bed.files.disk(vmId);
    // Left by an older agent, last written two hours ago and ten minutes ago: when they were
    // deleted is unknown, so both are stamped now and get the full retention.
    await writeFile(disk('vm-00000000000000a1'), 'qcow2');
    await utimes(disk('vm-00000000000000a1'), nowS - 7_200, nowS - 7_200);
    await writeFile(disk('vm-00000000000000a2'), 'qcow2');
    await utimes(disk('vm-00000000000000a2'), nowS - 600, nowS - 600);
    // Deleted two hours ago: past retention, swept.
    await writeFile(
      join(bed.root, 'deleted', `${nowMs - 2 * HOUR_MS}.vm-00000000000000a3.qcow2`),
      '',
    );
    // A VM the agent still has, and a disk whose VM's process still runs: both left alone.
    await bed.leftBehind('vm-00000000000000b1', { started_at: '2026-08-06T11:00:00.000Z' });
    await writeFile(disk('vm-00000000000000b1'), 'qcow2');
    await writeFile(disk('vm-00000000000000b2'), 'qcow2');
    bed.driver.live.set('vm-00000000000000b2', {
      record: { kind: 'fake', pid: 77 },
      hostPorts: [],
      rssMb: 40,
      summary: 'fake pid 77',
    });
    // Not named by the agent: never touched.
    await writeFile(join(bed.root, 'disks', 'notes.txt'), '');
    await writeFile(join(bed.root, 'deleted', 'keep-me.qcow2'), '');
    await mkdir(join(bed.root, 'deleted', '1.vm-00000000000000c1.qcow2'));
    // A symlink with a disk's name, long past retention: skipped, neither it nor its target goes.
    await writeFile(join(bed.root, 'target.qcow2'), '');
    await symlink(
      join(bed.root, 'target.qcow2'),
      join(bed.root, 'deleted', '2.vm-00000000000000c2.qcow2'),
    );

    await vm.vms.prepare();

    expect((await listed('disks')).sort()).toEqual([
      'notes.txt',
      'vm-00000000000000b1.qcow2',
      'vm-00000000000000b2.qcow2',
    ]);
    expect((await listed('deleted')).sort()).toEqual([
      '1.vm-00000000000000c1.qcow2',
      `${nowMs}.vm-00000000000000a1.qcow2`,
      `${nowMs}.vm-00000000000000a2.qcow2`,
      '2.vm-00000000000000c2.qcow2',
      'keep-me.qcow2',
    ]);
    expect(bed.logs).toContain(
      'warn vm vm-00000000000000b2: disk without a run folder kept, a process of it runs',
    );
    expect((await stat(join(bed.root, 'target.qcow2'))).isFile()).toBe(true);
  });

  it('at start-up with retention 0, removes the disks left without a run folder', async () => {
    const vm = await services(0);
    await writeFile(bed.files.disk('vm-00000000000000a1'), 'qcow2');
    await writeFile(
      join(bed.root, 'deleted', `${bed.clock.wallNow()}.vm-00000000000000a2.qcow2`),
      '',
    );
    await vm.vms.prepare();
    expect(await listed('disks')).toEqual([]);
    expect(await listed('deleted')).toEqual([]);
  });

  it('never builds a path from a name that is not a vm id', async () => {
    const vm = await services(0);
    await expect(vm.deletedDisks.retire('../etc')).rejects.toThrow('not a vm id');
    expect(() => bed.files.deletedDisk('a/b', 1)).toThrow('not a deleted disk');
  });
});
