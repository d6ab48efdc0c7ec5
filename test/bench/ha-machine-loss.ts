/**
 * Issue 36's figure, measured: three machines (network namespaces, each an etcd member and an
 * agent, two of them a controller, test/support/ha-fleet.ts), a protected 512 MB Debian guest
 * (one copy every 30 s) on the machine of the leading controller, a file synced in it and the
 * next copy taken; the machine killed whole. Prints, as one JSON line: from the kill to the VM
 * listed Running on a survivor and to its SSH answering there (goal <= 120 s under TCG), the
 * data lost (the age of the copy used, from the leader's log), and the load average.
 *
 *   npm run build && bash test/isolated.sh node -r ts-node/register/transpile-only \
 *     -r tsconfig-paths/register test/bench/ha-machine-loss.ts
 * (as root, with the guest image built; `npm run bench -- ha` runs it).
 */
import { existsSync } from 'node:fs';
import { stopAllDaemons } from '../support/daemons';
import { guestImagePath } from '../support/guest-image';
import { HaFleet } from '../support/ha-fleet';
import { loseMachine } from '../support/ha-scenario';
import { removeScratchFolders } from '../support/scratch-folders';
import { endTestRun, startTestRun } from '../support/test-run';

export interface MachineLossFigures {
  killToRunningS: number;
  killToSshS: number;
  copyAgeS: number;
  sameFile: boolean;
  overlaps: number;
  load: [number, number];
}

async function main(): Promise<void> {
  if (!existsSync(guestImagePath())) throw new Error(`no guest image ${guestImagePath()}`);
  startTestRun();
  let fleet: HaFleet | undefined;
  try {
    fleet = await HaFleet.start('ppn-bh', 87);
    // Measured, not asserted: a slow recovery is waited for (5 min) and shown as it is.
    const loss = await loseMachine(fleet, 300_000);
    const figures: MachineLossFigures = {
      killToRunningS: loss.killToRunningS,
      killToSshS: loss.killToSshS,
      copyAgeS: loss.copyAgeS,
      sameFile: loss.fileAfter === loss.fileBefore,
      overlaps: loss.overlaps.length,
      load: loss.load,
    };
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    await stopAllDaemons();
    fleet?.remove();
    removeScratchFolders();
    await endTestRun();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
