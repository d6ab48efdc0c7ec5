import { existsSync } from 'node:fs';
import { eventually, stopAllDaemons } from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS } from '../support/guest-ssh';
import { HA_FENCE_AFTER_S, HaFleet, HaMachine } from '../support/ha-fleet';
import {
  counterBoots,
  counterProblems,
  readCounter,
  startCounter,
} from '../support/ha-guest-counter';
import {
  COPY_WAIT_MS,
  copiedAfter,
  guestSsh,
  protectedGuest,
  runningElsewhere,
  sshPortOf,
} from '../support/ha-scenario';
import { AgentLogLine, AgentLogTimeline, QemuWatch } from '../support/ha-watch';

/**
 * The issue asks for at least 10: `npm run bench -- ha-partitions` runs 10 (about 1.7 min each
 * on 2 cores under TCG); the test tier runs 2, the second recovering the VM back onto the
 * machine it left in the first, to keep the whole CI under its 45 minutes.
 */
const TRIALS = Number(process.env.HA_PARTITION_TRIALS ?? '2');
/** What one trial may take at most on a loaded 2-core machine (seen: see the printed times). */
const TRIAL_MS = 60_000 + GUEST_SSH_DEADLINE_MS + COPY_WAIT_MS;

jest.setTimeout(GUEST_SSH_DEADLINE_MS + COPY_WAIT_MS + 300_000 + TRIALS * TRIAL_MS);

/**
 * Issue 36's partitions with real guests on three machines (network namespaces, each an etcd
 * member and an agent, two of them a controller): the machine running a protected VM is cut
 * off (nft drops all but its loopback traffic; its processes keep running). Each trial: it
 * fences the VM within fence_after; the VM is recovered on another machine only after that;
 * healed, the old machine sets its copy aside and never starts it. Over all trials no two QEMU
 * processes of the VM ran at once (a watch of every machine's processes, the agents' lines),
 * and the counter a systemd unit in the guest writes to its disk each second never had two
 * writers and lost, at each recovery, no more than the copy's age.
 */
describe(`${TRIALS} partitions of the machine running a protected VM`, () => {
  let fleet: HaFleet | undefined;

  beforeAll(async () => {
    if (!Number.isInteger(TRIALS) || TRIALS < 1) {
      throw new Error(`HA_PARTITION_TRIALS must be a whole number >= 1, not ${TRIALS}`);
    }
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    fleet = await HaFleet.start('ppn-hp', 84);
  });

  afterAll(async () => {
    await stopAllDaemons();
    fleet?.remove();
  });

  it('fences on time, recovers only after the fence, never starts the old copy, never runs twice', async () => {
    const ha = fleet!;
    let vm = await protectedGuest(ha, ha.machines[0], ha.machines[2]);
    const watch = new QemuWatch(ha.workDir, vm.vm_id, (args) => ha.nodeOfQemu(args));
    const timeline = new AgentLogTimeline(vm.vm_id);
    for (const machine of ha.machines) timeline.follow(machine.nodeId, machine.agent!);
    const explain = () => `\nagents' lines about ${vm.vm_id}:\n${timeline.toString()}`;
    try {
      await startCounter(ha.key, ha.machine(vm.node_id).host.address, sshPortOf(vm));
      let copiedSince = Date.now();
      const took: number[] = [];
      for (let trial = 1; trial <= TRIALS; trial++) {
        await copiedAfter(ha, vm.vm_id, copiedSince);
        const startedAt = Date.now();
        const cut = ha.machine(vm.node_id);
        const seen = await readCounter(ha.key, cut.host.address, sshPortOf(vm));
        const partitionedAt = Date.now();
        ha.partition(cut);
        let healed = false;
        try {
          // Fenced on time on the cut machine, its QEMU gone.
          const fenced = await lineAfter(
            timeline,
            cut,
            new RegExp(`fenced VM ${vm.vm_id} \\(its process ended hard`),
            partitionedAt,
            (HA_FENCE_AFTER_S + 10) * 1000,
          );
          expect(fenced.at - partitionedAt).toBeLessThanOrEqual(HA_FENCE_AFTER_S * 1000 + 3_000);
          expect(fenced.at - partitionedAt).toBeGreaterThanOrEqual(HA_FENCE_AFTER_S * 1000 - 3_000);

          const recovered = await runningElsewhere(ha, vm.vm_id, cut.nodeId, 180_000);
          const holder = ha.machine(recovered.node_id);
          // The new QEMU started after the fence ended the old one.
          const started = await lineAfter(
            timeline,
            holder,
            new RegExp(`vm ${vm.vm_id} started`),
            partitionedAt,
            60_000,
          );
          expect(started.at).toBeGreaterThan(fenced.at);
          // And as the machines' processes show it: the cut one's QEMU gone before the new one.
          const lives = [...watch.lives.values()];
          const oldGone = Math.max(
            ...lives.filter((life) => life.nodeId === cut.nodeId).map((life) => life.lastSeen),
          );
          const newSeen = Math.min(
            ...lives
              .filter((life) => life.nodeId === holder.nodeId && life.firstSeen > partitionedAt)
              .map((life) => life.firstSeen),
          );
          expect(newSeen).toBeGreaterThan(oldGone);

          ha.heal(cut);
          healed = true;
          await lineAfter(
            timeline,
            cut,
            new RegExp(`vm ${vm.vm_id}: superseded`),
            partitionedAt,
            60_000,
          );
          // The guest on the survivor, its writer started as at each boot: one writer at a
          // time, at most the copy's age lost.
          await guestSsh(ha, holder, recovered, 'true', started.at);
          await startCounter(ha.key, holder.host.address, sshPortOf(recovered));
          const lines = await readCounter(ha.key, holder.host.address, sshPortOf(recovered));
          // The survivor's file: what the old guest had written up to the copy (a prefix of
          // what was seen; the copy may predate that boot's first line), then a boot of its own.
          const newBoot = counterBoots(lines).at(-1)!;
          expect(counterBoots(seen).map((boot) => boot.boot)).not.toContain(newBoot.boot);
          const copied = lines.filter((line) => line.boot !== newBoot.boot);
          expect(seen.slice(0, copied.length)).toEqual(copied);
          expect(counterProblems(lines)).toEqual([]);
          const copyAgeS = copyAgeOf(ha, vm.vm_id, trial);
          const lost = seen.at(-1)!.n - newBoot.first + 1;
          expect(lost).toBeLessThanOrEqual(copyAgeS + 1);
          expect(watch.overlaps).toEqual([]);
          expect(
            [...watch.lives.values()].filter(
              (life) => life.nodeId === cut.nodeId && life.firstSeen > partitionedAt,
            ),
          ).toEqual([]);

          const [through] = await ha.answeringControllers();
          const copies = await ha.cli(through, ['vm', 'copies', vm.vm_id]);
          expect(copies.stdout).toContain(`(generation ${trial}: recovered on another node`);
          took.push(Date.now() - startedAt);
          console.log(
            `[ha] partition trial ${trial}/${TRIALS}: ${cut.nodeId} cut, fenced after ${((fenced.at - partitionedAt) / 1000).toFixed(1)} s, ` +
              `running on ${holder.nodeId} after ${((started.at - partitionedAt) / 1000).toFixed(1)} s, ` +
              `${lost} counter ticks lost (copy age ${copyAgeS} s), trial ${(took.at(-1)! / 1000).toFixed(0)} s`,
          );
          copiedSince = started.at;
          vm = recovered;
        } catch (error) {
          const tail = cut.agent!.output.split('\n').slice(-15).join('\n');
          const controllers = ha
            .controllerMachines()
            .map(
              (machine) =>
                `${machine.nodeId}'s controller, its last lines on leadership and recovery:\n` +
                (machine.controller?.output ?? '')
                  .split('\n')
                  .filter((line) => /Leadership|Recovery|Restore|etcd/.test(line))
                  .slice(-15)
                  .join('\n'),
            )
            .join('\n');
          throw new Error(
            `${(error as Error).message}${explain()}\n${cut.nodeId}'s agent, last lines:\n${tail}\n${controllers}`,
          );
        } finally {
          if (!healed) ha.heal(cut);
        }
      }
      const mean = took.reduce((sum, each) => sum + each, 0) / took.length;
      console.log(
        `[ha] ${TRIALS} partition trials, one took ${(mean / 1000).toFixed(0)} s on average ` +
          `(${took.map((each) => (each / 1000).toFixed(0)).join(', ')} s), plus the copy wait before each`,
      );
    } finally {
      watch.stop();
    }
  });
});

/** The first agent line of `machine` matching `pattern` that arrived after `after`. */
function lineAfter(
  timeline: AgentLogTimeline,
  machine: HaMachine,
  pattern: RegExp,
  after: number,
  timeoutMs: number,
): Promise<AgentLogLine> {
  return eventually(
    `${machine.nodeId} saying ${pattern}`,
    () =>
      Promise.resolve(
        timeline
          .matching(pattern)
          .find(({ nodeId, at }) => nodeId === machine.nodeId && at > after),
      ),
    timeoutMs,
    100,
  );
}

/** The copy age the leader logged at the VM's recovery to `generation`. */
function copyAgeOf(fleet: HaFleet, vmId: string, generation: number): number {
  const pattern = new RegExp(
    `vm ${vmId} recovered on node \\S+ from .*\\(copy age (\\d+) s\\), generation ${generation}\\b`,
  );
  for (const machine of fleet.controllerMachines()) {
    const found = pattern.exec(machine.controller?.output ?? '');
    if (found) return Number(found[1]);
  }
  throw new Error(`no controller logged the recovery of ${vmId} to generation ${generation}`);
}
