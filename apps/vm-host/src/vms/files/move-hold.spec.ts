import { writeFile } from 'node:fs/promises';
import { fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmsService } from '../vms.service';
import { moveHoldPath } from './move-hold';

/**
 * The old node of a live move whose take-over the new node never confirmed, its QEMU (the guest
 * paused in it) ended meanwhile, as by a reboot: the VM is not started again from its disk while
 * the move holds it, for the new node may run it; once the hold is gone it starts as ever.
 */
describe('a VM held by an unconfirmed move out, its QEMU gone, at the agent start', () => {
  const vmId = 'vm-00000000000000ab';
  let bed: VmBed;
  let vms: VmsService;

  beforeEach(async () => {
    bed = await openVmBed('move-hold-');
    ({ vms } = await vmServices({
      files: bed.files,
      driver: bed.driver,
      clock: bed.clock,
      hostFacts: fakeHostFacts({ ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 }),
      config: vmHostConfig({ VM_NODE_ID: 'node-a' }),
    }));
    await bed.leftBehind(vmId, { started_at: '2026-08-06T11:00:00.000Z' });
  });

  afterEach(() => closeVmBed(bed));

  // The start-up reconciliation decides (and logs) a start again before prepare resolves.
  const startAgain = `vm ${vmId}: not running when the agent started`;

  it('is not started again while held', async () => {
    await writeFile(moveHoldPath(bed.files, vmId), '{}');
    await vms.prepare();
    await vms.report();
    expect(bed.logs.join('\n')).not.toContain(startAgain);
    expect(bed.driver.creates).toEqual([]);
  });

  it('starts again once no move holds it', async () => {
    await vms.prepare();
    expect(bed.logs.join('\n')).toContain(startAgain);
    const giveUpAt = Date.now() + 10_000;
    while (bed.driver.creates.length === 0 && Date.now() < giveUpAt) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(bed.driver.creates.map(({ spec }) => spec.vmId)).toEqual([vmId]);
  });
});
