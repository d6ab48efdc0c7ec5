/**
 * What a VM's QEMU really takes against what the agent commits for it (ram_alloc_mb plus its
 * overhead: TCG_OVERHEAD_MB under TCG, HYPERVISOR_OVERHEAD_MB under KVM): a 512 MB Debian guest
 * made through the controller and an agent on the guest image, booted (it answers SSH), then
 * run through a few seconds of work, its QEMU's resident memory sampled. Under TCG always, under
 * KVM when the agent can use it. Goal: resident / committed <= 1.1.
 *
 *   npm run build && ts-node -T -r tsconfig-paths/register test/bench/qemu-memory.ts
 * (as root, with the guest image built; run.ts calls it too). Prints one JSON line per accel.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { HYPERVISOR_OVERHEAD_MB, TCG_OVERHEAD_MB } from '@app/fleet-domain';
import {
  FLEET_URL,
  eventually,
  getJson,
  listeningFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { startGuestAgent } from './guest-agent';

export interface QemuMemory {
  accel: 'tcg' | 'kvm';
  guestMb: number;
  committedMb: number;
  residentMb: number;
  ratio: number;
}

const GUEST_MB = 512;

function residentMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** One VM under `accel` (KVM asked for with prefer_kvm), measured; undefined if it ran otherwise. */
async function measure(
  workDir: string,
  key: string,
  accel: 'tcg' | 'kvm',
): Promise<QemuMemory | undefined> {
  const createdAt = Date.now();
  const response = await fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      vm_type: 'bench',
      ram_mb: GUEST_MB,
      vcpu_count: 1,
      prefer_kvm: accel === 'kvm',
    }),
  });
  if (response.status !== 201) throw new Error(`create answered ${response.status}`);
  const { vm_id: vmId } = (await response.json()) as { vm_id: string };
  type Listed = { vm_id: string; state: string; host_ports: Array<{ host_port: number }> };
  const vm = await eventually(
    `${vmId} Running`,
    async () =>
      (await getJson<Listed[]>('/v1/vms')).find(
        (listed) => listed.vm_id === vmId && listed.state === 'Running',
      ),
    30_000,
  );
  const [qemu] = liveQemusUnder(workDir).filter(({ args }) => args.includes(`guest=${vmId}`));
  const ranUnder = qemu.args.some((arg) => arg.includes('accel=kvm') || arg === 'kvm')
    ? 'kvm'
    : 'tcg';
  const port = vm.host_ports[0].host_port;
  await sshOnceUp(key, '127.0.0.1', port, 'true', {
    since: createdAt,
    deadlineMs: GUEST_SSH_DEADLINE_MS,
    serialLog: join(workDir, 'disks', 'run', vmId, 'serial.log'),
  });
  await sshRun(
    key,
    '127.0.0.1',
    port,
    "timeout 20 sh -c 'find / -xdev; dpkg -l; ls -lR /usr/share; sha256sum /usr/bin/*' >/dev/null 2>&1; true",
  );
  const rss = residentMb(qemu.pid);
  await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' });
  if (ranUnder !== accel) {
    // KVM present but failing (nested, say): the agent started it under TCG instead.
    console.log(
      `  QEMU memory under ${accel}: not measured, the agent ran the VM under ${ranUnder}`,
    );
    return undefined;
  }
  const committedMb = GUEST_MB + (accel === 'tcg' ? TCG_OVERHEAD_MB : HYPERVISOR_OVERHEAD_MB);
  return { accel, guestMb: GUEST_MB, committedMb, residentMb: rss, ratio: rss / committedMb };
}

/** Measures under TCG, then KVM; expects a controller listening on 9203 already. */
export async function measureQemuMemory(): Promise<QemuMemory[]> {
  const { agent, workDir, key } = await startGuestAgent('bench-qemu');
  const results: QemuMemory[] = [];
  try {
    for (const accel of ['tcg', 'kvm'] as const) {
      const measured = await measure(workDir, key, accel);
      if (measured) results.push(measured);
    }
  } finally {
    await agent.stop();
    killQemusUnder(workDir);
    rmSync(workDir, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) {
  void (async () => {
    try {
      await listeningFleetDaemon();
      for (const result of await measureQemuMemory()) console.log(JSON.stringify(result));
    } finally {
      await stopAllDaemons();
    }
  })();
}
