import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestAndKey, listedVm } from '../support/copied-guests';
import { guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { NodeMesh } from '../support/node-mesh';
import { PrometheusServer, SHIPPED_RULES } from '../support/prometheus-server';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { freePort } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The peer's disk full: its VM_DISK_DIR a 96 MiB tmpfs, far smaller than a copy of the guest;
 * each node an agent in a network namespace of its own. The copy is refused before anything is
 * written (507, naming the VM and the room), the source says so in its log and tries again at
 * the next interval, its VM keeps running untouched (the same QEMU, reachable, writing), and
 * PpnFleetVmCopyStale fires for it in a real Prometheus scraping the controller's metrics with
 * the shipped rules unchanged (1 s scrapes and evaluations; the rule's three intervals, 90 s at
 * every_s 30, and its `for: 1m` as they are: about 150 s after the VM started).
 */
jest.setTimeout(GUEST_SSH_DEADLINE_MS + 360_000);

const SOURCE = 'roomy-a';
const PEER = 'full-b';
const EVERY_S = 30;
/** The rule's own: a copy older than three intervals, for a minute. */
const STALE_AFTER_MS = 3 * EVERY_S * 1000;
const FOR_MS = 60_000;
const workDir = scratchFolder('vm-replicas-full-');
const peerDisks = join(workDir, PEER);

describe("a peer whose disk has no room for a VM's copy", () => {
  let mesh: NodeMesh | undefined;
  let prometheus: PrometheusServer | undefined;
  let source: Daemon;
  let sourceIp: string;
  let key: string;
  let pubkey: string;

  beforeAll(async () => {
    ({ key, pubkey } = guestAndKey(workDir, 'full'));
    mkdirSync(peerDisks, { mode: 0o700 });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=96m,mode=0700', 'tmpfs', peerDisks]);
    mesh = NodeMesh.create(['ppn-full-a', 'ppn-full-b'], 75);
    const [hostA, hostB] = mesh.hosts;
    sourceIp = hostA.address;
    const metrics = `127.0.0.1:${await freePort()}`;
    const fleet = startFleetDaemon({ VM_FLEET_METRICS_ADDR: metrics });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    const common = {
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_RETENTION_S: '0',
      VM_SSH_PUBKEY: pubkey,
      VM_ACCEL: 'auto',
    };
    const started = await Promise.all([
      PrometheusServer.start({ 'service-vm-fleet': [metrics] }, [SHIPPED_RULES]),
      enrolled(
        startAgent(
          {
            ...common,
            VM_FLEET_ENDPOINT: `http://${hostB.hostAddress}:9203`,
            VM_NODE_ID: PEER,
            VM_WG_IP: hostB.address,
            VM_DISK_DIR: peerDisks,
          },
          [],
          hostB.name,
        ),
      ),
      enrolled(
        startAgent(
          {
            ...common,
            VM_FLEET_ENDPOINT: `http://${hostA.hostAddress}:9203`,
            VM_NODE_ID: SOURCE,
            VM_WG_IP: hostA.address,
            VM_DISK_DIR: join(workDir, SOURCE),
            VM_BASE_IMAGE: guestImagePath(),
          },
          [],
          hostA.name,
        ),
      ),
    ]);
    prometheus = started[0];
    source = started[2];
  });

  afterAll(async () => {
    await prometheus?.stop();
    await stopAllDaemons();
    mesh?.remove();
    killQemusUnder(workDir);
    execFileSync('umount', ['-l', peerDisks]);
  });

  it('refuses the copy with a clear error on the source, which keeps its VM running; the alert fires', async () => {
    const createdAt = Date.now();
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        vm_type: 'full',
        ram_mb: 512,
        vcpu_count: 1,
        preferred_node: SOURCE,
        copies: { count: 1, every_s: EVERY_S },
      }),
    });
    expect(response.status).toBe(201);
    const vmId = ((await response.json()) as { vm_id: string }).vm_id;
    const qemuOf = () =>
      liveQemusUnder(join(workDir, SOURCE))
        .filter(({ args }) => args.includes(`guest=${vmId}`))
        .map(({ pid }) => pid);
    const failed = new RegExp(
      `vm ${vmId}: copy to node ${PEER} failed: node ${PEER} answered POST /v1/replicas/${vmId}/transfers with 507: no room for vm ${vmId}'s copy on this node: [\\d.]+ MB to receive, [\\d.]+ MB free in VM_DISK_DIR beyond its reserve \\(tried again in ${EVERY_S} s\\)`,
    );
    await source.waitForOutput(failed, 240_000);
    // Nothing of it written on the peer.
    const replicas = join(peerDisks, 'replicas');
    expect(existsSync(replicas) ? readdirSync(replicas) : []).toEqual([]);

    // The VM runs on, untouched: listed Running, reachable, writing.
    const vm = (await listedVm(vmId))!;
    expect(vm.state).toBe('Running');
    const port = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    await sshOnceUp(key, sourceIp, port, 'true', {
      since: createdAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(workDir, SOURCE, 'run', vmId, 'serial.log'),
    });
    expect(await sshRun(key, sourceIp, port, 'echo written > ~/f && sync && cat ~/f')).toContain(
      'written',
    );
    // Its QEMU once booted (a daemonized QEMU forks, and VM_ACCEL=auto may fall back from KVM):
    // the same process must run it to the end.
    expect(qemuOf()).toHaveLength(1);
    const [qemu] = qemuOf();
    // Tried again at the next interval, refused again the same way.
    const from = source.output.search(failed) + 1;
    await eventually(
      'a second refusal',
      () => Promise.resolve(failed.exec(source.output.slice(from)) ?? undefined),
      90_000,
      500,
    );

    // The alert, from the controller's metrics as Prometheus scrapes them: pending once the VM
    // has gone three intervals without a copy, firing a minute later, for this VM on its node.
    const alert = await eventually(
      `PpnFleetVmCopyStale firing for ${vmId}`,
      async () =>
        (await prometheus!.alerts()).find(
          ({ labels, state }) =>
            labels.alertname === 'PpnFleetVmCopyStale' &&
            labels.vm_id === vmId &&
            state === 'firing',
        ),
      Math.max(30_000, createdAt + STALE_AFTER_MS + FOR_MS + 120_000 - Date.now()),
      500,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; prometheus output:\n${prometheus!.log}`);
    });
    const firingSeenAt = Date.now();
    console.log(
      `PpnFleetVmCopyStale: pending ${(Date.parse(alert.activeAt) - createdAt) / 1000} s after the create, firing seen at ${(firingSeenAt - createdAt) / 1000} s`,
    );
    expect(alert.labels).toEqual({
      alertname: 'PpnFleetVmCopyStale',
      severity: 'warning',
      vm_id: vmId,
      node_id: SOURCE,
    });
    expect(alert.annotations.summary).toMatch(
      new RegExp(`^VM ${vmId} on ${SOURCE}: no copy on another node for \\d+m \\d+s$`),
    );
    // Not before three intervals since the VM started (after the create), nor the minute after.
    expect(Date.parse(alert.activeAt)).toBeGreaterThanOrEqual(createdAt + STALE_AFTER_MS - 1_000);
    expect(firingSeenAt - Date.parse(alert.activeAt)).toBeGreaterThanOrEqual(FOR_MS);

    // And through all of it the same QEMU ran the VM.
    expect(qemuOf()).toEqual([qemu]);
    expect(await sshRun(key, sourceIp, port, 'cat ~/f')).toBe('written\n');
  });
});
