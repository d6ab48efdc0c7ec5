import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Daemon, eventually, startAgent, stopAllDaemons } from '../support/daemons';
import { sampleValue } from '../support/prometheus-text';
import { liveQemusUnder } from '../support/qemu-processes';
import { freePort } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Self-fencing with a real agent and real QEMU (TCG, a blank base image): a controller in etcd
 * mode (stood in for here) answers heartbeats with fence_after_s; once it stops answering, the
 * agent kills the protected VM's QEMU within fence_after_s of the last renewing heartbeat,
 * keeps its disk, leaves the unprotected VM running, and starts the protected one again once
 * answers renew the lease. The agent names two controllers, the first of them dead: the
 * heartbeats go to the second.
 */
jest.setTimeout(120_000);

const FENCE_AFTER_S = 10;
const WG_IP = '127.0.0.41';
const SPAWN_PORT = 9204;
const METRICS = `${WG_IP}:9290`;
const workDir = scratchFolder('fence-');
const baseImage = join(workDir, 'base.qcow2');
const diskDir = join(workDir, 'node');

interface Beat {
  fenced_vm_ids?: string[];
}

/** The controller of etcd mode as the agent sees it: renews the lease while it answers. */
class LeaseController {
  answering = true;
  /** When the last answered heartbeat arrived (Date.now()). */
  lastAnsweredAt = 0;
  /** Every heartbeat answered, in order. */
  readonly answered: Beat[] = [];
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        // Not answering: the connection dropped, as a controller cut off from the node.
        if (!this.answering) return request.socket.destroy();
        this.lastAnsweredAt = Date.now();
        this.answered.push(JSON.parse(body) as Beat);
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ accepted: true, fence_after_s: FENCE_AFTER_S }));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function qemuPidsOf(vmId: string): number[] {
  return liveQemusUnder(workDir)
    .filter(({ args }) => args.includes(`guest=${vmId}`))
    .map(({ pid }) => pid);
}

async function spawn(copies: number): Promise<string> {
  const response = await fetch(`http://${WG_IP}:${SPAWN_PORT}/v1/spawn`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      vm_type: 'fenced',
      ram_mb: 64,
      vcpu_count: 1,
      prefer_kvm: false,
      copies: { count: copies, every_s: 60 },
    }),
  });
  const body = (await response.json()) as { vm_id: string; message?: string };
  if (response.status !== 201)
    throw new Error(`spawn answered ${response.status}: ${body.message}`);
  return body.vm_id;
}

async function scraped(sample: string): Promise<number | undefined> {
  return sampleValue(await (await fetch(`http://${METRICS}/metrics`)).text(), sample);
}

describe('an agent whose lease is not renewed (etcd mode)', () => {
  const controller = new LeaseController();
  let agent: Daemon;
  let controllerUrl: string;
  let env: NodeJS.ProcessEnv;
  const vms: { protected?: string; unprotected?: string } = {};

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    controllerUrl = await controller.start();
    const dead = `http://127.0.0.1:${await freePort()}`;
    env = {
      VM_FLEET_ENDPOINT: `${dead},${controllerUrl}`,
      VM_NODE_ID: 'fencing-node',
      VM_WG_IP: WG_IP,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: diskDir,
      VM_BASE_IMAGE: baseImage,
      VM_METRICS_ADDR: METRICS,
    };
    agent = startAgent(env);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await controller.stop();
  });

  it('heartbeats to the second controller when the first is dead, and sticks to it', async () => {
    await agent.waitForOutput(
      new RegExp(`enrolled: heartbeating to ${controllerUrl.replace(/\./g, '\\.')} every 1 s`),
    );
    await agent.waitForOutput(/keeps this node's lease in etcd/);
    const seen = controller.answered.length;
    await eventually(
      'three more heartbeats',
      () => Promise.resolve(controller.answered.length >= seen + 3 ? true : undefined),
      10_000,
    );
    expect(agent.output).not.toMatch(/heartbeat answered by/);
  });

  it('kills the protected QEMU within fence_after_s of the last renewal, keeps its disk and the unprotected VM, and starts it again once renewed', async () => {
    const protectedVm = await spawn(1);
    const unprotectedVm = await spawn(0);
    Object.assign(vms, { protected: protectedVm, unprotected: unprotectedVm });
    await eventually(
      'both QEMUs running',
      () =>
        Promise.resolve(
          qemuPidsOf(protectedVm).length === 1 && qemuPidsOf(unprotectedVm).length === 1
            ? true
            : undefined,
        ),
      30_000,
      200,
    );

    controller.answering = false;
    const lastRenewal = controller.lastAnsweredAt;
    const fencedAt = await agent.waitForOutput(
      new RegExp(
        `node fencing-node: lease not renewed for \\d+s, fenced VM ${protectedVm} \\(its process ended hard`,
      ),
      (FENCE_AFTER_S + 10) * 1000,
    );
    // Not before fence_after_s after the renewing heartbeat (sent just before it arrived here),
    // and within a few seconds after.
    expect(fencedAt - lastRenewal).toBeGreaterThanOrEqual(FENCE_AFTER_S * 1000 - 500);
    expect(fencedAt - lastRenewal).toBeLessThanOrEqual(FENCE_AFTER_S * 1000 + 4_000);
    expect(qemuPidsOf(protectedVm)).toEqual([]);
    expect(qemuPidsOf(unprotectedVm)).toHaveLength(1);
    expect(existsSync(join(diskDir, 'disks', `${protectedVm}.qcow2`))).toBe(true);
    expect(await scraped('ppn_vm_host_fences_total')).toBe(1);
    expect(await scraped('ppn_vm_host_fenced_vms')).toBe(1);

    const before = controller.answered.length;
    controller.answering = true;
    const first = await eventually(
      'an answered heartbeat',
      () => Promise.resolve(controller.answered[before]),
      10_000,
      100,
    );
    expect(first.fenced_vm_ids).toEqual([protectedVm]);
    await agent.waitForOutput(new RegExp(`lease renewed, VM ${protectedVm} unfenced`), 10_000);
    await eventually(
      'the protected QEMU running again',
      () => Promise.resolve(qemuPidsOf(protectedVm).length === 1 ? true : undefined),
      30_000,
      200,
    );
    expect(qemuPidsOf(unprotectedVm)).toHaveLength(1);
    // Started again as an unfenced VM, not as a crash (no backoff, no crash loop).
    await agent.waitForOutput(
      new RegExp(
        `vm ${protectedVm} started again from its disk \\(unfenced: its node's lease renewed`,
      ),
      10_000,
    );
    expect(await scraped('ppn_host_vm_restarts_total{reason="unfenced"}')).toBe(1);
    expect(await scraped('ppn_host_vm_restarts_total{reason="crashed"}')).toBeUndefined();
    expect(await scraped('ppn_vm_host_fenced_vms')).toBe(0);
    const later = controller.answered.length;
    await eventually(
      'a heartbeat without fenced VMs',
      () =>
        Promise.resolve(
          controller.answered.slice(later).some((beat) => beat.fenced_vm_ids === undefined)
            ? true
            : undefined,
        ),
      10_000,
      100,
    );
  });

  it('after a reboot, a restarted agent holds the protected VM until a heartbeat renews the lease', async () => {
    const { protected: protectedVm, unprotected: unprotectedVm } = vms as Required<typeof vms>;
    // The machine goes down: the agent and every QEMU end; it comes back cut off.
    await agent.stop();
    for (const pid of [...qemuPidsOf(protectedVm), ...qemuPidsOf(unprotectedVm)]) {
      process.kill(pid, 'SIGKILL');
    }
    await eventually(
      'every QEMU gone',
      () => Promise.resolve(liveQemusUnder(workDir).length === 0 ? true : undefined),
      10_000,
      100,
    );
    controller.answering = false;

    agent = startAgent(env);
    await agent.waitForOutput(
      new RegExp(`node fencing-node: lease not renewed for \\d+s, holding VM ${protectedVm}`),
    );
    await eventually(
      'the unprotected QEMU started again',
      () => Promise.resolve(qemuPidsOf(unprotectedVm).length === 1 ? true : undefined),
      30_000,
      200,
    );
    expect(qemuPidsOf(protectedVm)).toEqual([]);

    controller.answering = true;
    await agent.waitForOutput(new RegExp(`lease renewed, VM ${protectedVm} unfenced`), 10_000);
    await eventually(
      'the protected QEMU started again',
      () => Promise.resolve(qemuPidsOf(protectedVm).length === 1 ? true : undefined),
      30_000,
      200,
    );
  });
});
