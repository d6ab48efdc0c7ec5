/**
 * Copies of a real guest on a peer node, measured: the built controller and two built agents
 * (each its own loopback address), a 512 MB Debian guest (the guest image) copied every 30 s,
 * VM_COPY_MAX_MBPS=0 (unlimited) for the first two figures:
 *   - a full copy between the two agents: MB/s (QEMU's copy, staging and the send together);
 *   - the bytes an incremental sends after the guest wrote 64 MiB of random data, against
 *     64 MiB (goal <= 1.25);
 *   - the guest's write throughput (dd, 128 MiB, O_DIRECT) during a full copy at the default
 *     VM_COPY_MAX_MBPS (40) against without one (goal >= 0.8).
 *
 *   npm run build && ts-node -T -r tsconfig-paths/register test/bench/copies.ts
 * (as root, with the guest image built; `npm run bench -- copies` runs it). Prints one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  eventually,
  getJson,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

export interface CopiesResult {
  fullBytes: number;
  fullSeconds: number;
  fullMBps: number;
  incrementalBytes: number;
  incrementalOverWritten: number;
  writeWithoutMBps: number;
  writeDuringMBps: number;
  writeDuringOverWithout: number;
}

const SOURCE = 'bench-copies-a';
const PEER = 'bench-copies-b';
const SOURCE_IP = '127.0.0.51';
const PEER_IP = '127.0.0.52';
const WAIT_MS = 300_000;
const MIB = 1024 * 1024;

function nextMatch(daemon: Daemon, from: number, pattern: RegExp): Promise<RegExpExecArray> {
  return eventually(
    `${pattern}`,
    () => Promise.resolve(pattern.exec(daemon.output.slice(from)) ?? undefined),
    WAIT_MS,
    100,
  );
}

/** dd's own figure: bytes over seconds of its last line. */
function ddMBps(output: string): number {
  const match = /(\d+) bytes .* copied, ([\d.]+) s/.exec(output);
  if (!match) throw new Error(`dd said: ${output}`);
  return Number(match[1]) / 1e6 / Number(match[2]);
}

export async function measureCopies(): Promise<CopiesResult> {
  const workDir = scratchFolder('bench-copies-');
  const key = join(workDir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'bench', '-f', key]);
  const pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
  const agent = (
    nodeId: string,
    ip: string,
    rate: NodeJS.ProcessEnv = { VM_COPY_MAX_MBPS: '0' },
  ): Daemon =>
    startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: nodeId,
      VM_WG_IP: ip,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: join(workDir, nodeId),
      VM_DISK_RETENTION_S: '0',
      VM_BASE_IMAGE: guestImagePath(),
      VM_SSH_PUBKEY: pubkey,
      VM_ACCEL: 'auto',
      ...rate,
    });
  try {
    const fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    const peer = agent(PEER, PEER_IP);
    let source = agent(SOURCE, SOURCE_IP);
    await Promise.all([peer, source].map((daemon) => daemon.waitForOutput(/ enrolled: /)));
    const createdAt = Date.now();
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        vm_type: 'bench',
        ram_mb: 512,
        vcpu_count: 1,
        preferred_node: SOURCE,
        copies: { count: 1, every_s: 30 },
      }),
    });
    if (response.status !== 201) throw new Error(`create answered ${response.status}`);
    const vmId = ((await response.json()) as { vm_id: string }).vm_id;
    const vm = await eventually(
      'the guest running',
      async () =>
        (
          await getJson<
            Array<{ vm_id: string; host_ports: Array<{ host_port: number; guest_port: number }> }>
          >('/v1/vms')
        ).find(({ vm_id, host_ports }) => vm_id === vmId && host_ports.length > 0),
      60_000,
      200,
    );
    const port = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    const serialLog = join(workDir, SOURCE, 'run', vmId, 'serial.log');
    await sshOnceUp(key, SOURCE_IP, port, 'true', {
      since: createdAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog,
    });
    const ssh = (command: string): Promise<string> => sshRun(key, SOURCE_IP, port, command);
    const taken = new RegExp(
      `vm ${vmId}: copy to node ${PEER} taken: (full|incremental), (\\d+) bytes sent in ([\\d.]+) s`,
    );

    const full = await nextMatch(source, 0, taken);
    if (full[1] !== 'full') throw new Error(`the first copy was ${full[1]}`);
    const fullBytes = Number(full[2]);
    const fullSeconds = Number(full[3]);

    // Right after a copy: 64 MiB of random data, then the next copy's bytes.
    let from = source.output.length;
    await nextMatch(source, from, taken);
    await ssh(`head -c ${64 * MIB} /dev/urandom > ~/random && sync`);
    from = source.output.length;
    const incremental = await nextMatch(source, from, taken);
    const incrementalBytes = Number(incremental[2]);

    // The guest's writes with no copy under way (one just ended), then during a full copy
    // (the peer's copy removed: the next one is full), at the agent's default rate: the source
    // agent started again without VM_COPY_MAX_MBPS (its VM runs on, its copies continue).
    await source.stop();
    const paced = agent(SOURCE, SOURCE_IP, {});
    await paced.waitForOutput(/ enrolled: /);
    source = paced;
    const dd = `dd if=/dev/zero of=~/w bs=1M count=128 oflag=direct conv=fsync 2>&1 | tail -1; rm -f ~/w`;
    from = source.output.length;
    await nextMatch(source, from, taken);
    const writeWithoutMBps = ddMBps(await ssh(dd));
    rmSync(join(workDir, PEER, 'replicas', vmId), { recursive: true, force: true });
    from = source.output.length;
    await nextMatch(source, from, new RegExp(`vm ${vmId}: full copy to node ${PEER} begun`));
    const writeDuringMBps = ddMBps(await ssh(dd));
    await nextMatch(source, from, taken);
    return {
      fullBytes,
      fullSeconds,
      fullMBps: fullBytes / 1e6 / fullSeconds,
      incrementalBytes,
      incrementalOverWritten: incrementalBytes / (64 * MIB),
      writeWithoutMBps,
      writeDuringMBps,
      writeDuringOverWithout: writeDuringMBps / writeWithoutMBps,
    };
  } finally {
    await stopAllDaemons();
    killQemusUnder(workDir);
    rmSync(workDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  measureCopies().then(
    (result) => console.log(JSON.stringify(result)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
