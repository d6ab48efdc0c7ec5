/**
 * A VM's moves, measured: the built controller and two built agents (each its own loopback
 * address, test/support/move-nodes.ts), an idle 512 MB Debian guest (the guest image) under the
 * accelerator the agents pick (VM_ACCEL=auto: KVM where this machine runs guests with it, else
 * TCG; printed), moved live to the other node, then stopped and moved cold back:
 *   - the live move: the guest's pause (the agent's, switchover to running there; goal <= 1 s
 *     for an idle 512 MB guest under TCG) and the guest's own largest gap between two 100 ms
 *     ticks, its total time, the bytes sent;
 *   - the cold move: its total time, the bytes sent;
 *   - the load (`uptime`) before and after.
 *
 *   npm run build && ts-node -T -r tsconfig-paths/register test/bench/move.ts
 * (as root, with the guest image built; `npm run bench -- move` runs it). Prints one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { MovedVm } from '@app/fleet-domain';
import { Daemon, startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { sshRun } from '../support/guest-ssh';
import { guestKey, guestOn, listedOn, moveNodes, startMoveNode } from '../support/move-nodes';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

const OPS_URL = 'http://127.0.0.1:9206';

export interface MoveFigures {
  accel: string;
  live: { pauseMs: number; guestGapMs: number; totalMs: number; bytesSent: number };
  cold: { totalMs: number; bytesSent: number };
  uptimeBefore: string;
  uptimeAfter: string;
}

async function move(vmId: string, to: string): Promise<MovedVm> {
  const response = await fetch(`${OPS_URL}/v1/vms/${vmId}/move`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ to }),
    signal: AbortSignal.timeout(600_000),
  });
  const body = (await response.json()) as MovedVm & { message?: string };
  if (!response.ok) throw new Error(`move to ${to} answered ${response.status}: ${body.message}`);
  return body;
}

const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

export async function measureMoves(): Promise<MoveFigures> {
  const workDir = scratchFolder('bench-move-');
  const { a: A, b: B } = moveNodes(workDir);
  const uptimeBefore = uptime();
  let fleet: Daemon | undefined;
  try {
    const { key, pubkey } = guestKey(workDir);
    fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    await startMoveNode(A, pubkey, { VM_ACCEL: 'auto' });
    await startMoveNode(B, pubkey, { VM_ACCEL: 'auto' });
    const guest = await guestOn(A, key, 'cat /proc/sys/kernel/random/boot_id');
    const { vmId, sshPort } = guest;
    // Under auto, a guest KVM cannot run is started again under TCG: the accelerator it runs on.
    const accel = (await listedOn(vmId, A.id, 'Running')).accel ?? 'unknown';

    // Live, while the guest writes a line every 100 ms: the largest gap is the pause it lived.
    const ticking = sshRun(
      key,
      A.wgIp,
      sshPort,
      'while [ ! -e ~/stop ]; do date +%s.%N >> ~/ticks; sleep 0.1; done',
    ).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const live = await move(vmId, B.id);
    await listedOn(vmId, B.id, 'Running');
    await sshRun(key, B.wgIp, sshPort, 'sleep 2; touch ~/stop').catch(() => undefined);
    await ticking;
    const ticks = (await sshRun(key, B.wgIp, sshPort, 'cat ~/ticks'))
      .trim()
      .split('\n')
      .map(Number)
      .filter((tick) => Number.isFinite(tick) && tick > 0);
    const guestGapMs = Math.round(
      1000 * Math.max(...ticks.slice(1).map((tick, at) => tick - ticks[at])),
    );

    const stopped = await ppnFleet(['vm', 'stop', vmId], {}, 300_000);
    if (stopped.code !== 0) throw new Error(`vm stop exited ${stopped.code}: ${stopped.stderr}`);
    await listedOn(vmId, B.id, 'Stopped');
    const cold = await move(vmId, A.id);
    await listedOn(vmId, A.id, 'Stopped');
    return {
      accel,
      live: {
        pauseMs: live.pause_ms ?? -1,
        guestGapMs,
        totalMs: live.total_ms,
        bytesSent: live.bytes_sent,
      },
      cold: { totalMs: cold.total_ms, bytesSent: cold.bytes_sent },
      uptimeBefore,
      uptimeAfter: uptime(),
    };
  } finally {
    await stopAllDaemons();
    killQemusUnder(workDir);
    rmSync(workDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  measureMoves().then(
    (figures) => console.log(JSON.stringify(figures)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
