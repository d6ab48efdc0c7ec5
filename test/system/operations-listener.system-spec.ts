import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(120_000);

/**
 * The controller's operations listener (VM_FLEET_OPS_ADDR, 127.0.0.1:9206 by default) with real
 * daemons and real QEMU: it takes the API token when one is set, and bad input (an unknown VM, a
 * VM being created, a stop of a stopped VM, a silent node) gets a 4xx naming the VM and changes
 * nothing. Its QEMU starts 3 s late (a wrapper first on the agent's PATH), so a VM stays in
 * creation long enough to be asked for something.
 */
const OPS_URL = 'http://127.0.0.1:9206';
const API_TOKEN = 'ops-listener-system-spec-api-token-0123';
const NODE = 'ops-node';
const JUMP = join(__dirname, '../support/monotonic-clock-jump.cjs');
const workDir = scratchFolder('operations-listener-');
const baseImage = join(workDir, 'base.qcow2');
const slowQemuDir = join(workDir, 'bin');
const auth = { authorization: `Bearer ${API_TOKEN}` };

interface Answer {
  status: number;
  body: { message?: string; state?: string; vm_id?: string };
}

async function call(
  method: string,
  url: string,
  headers: Record<string, string> = auth,
  body?: unknown,
): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Answer['body']) : {} };
}

function qemusOf(vmId: string): number {
  return liveQemusUnder(workDir).filter(({ args }) => args.includes(`guest=${vmId}`)).length;
}

async function opsState(vmId: string, state: string): Promise<void> {
  await eventually(
    `${vmId} ${state} on the operations listener`,
    async () => {
      const vm = await call('GET', `${OPS_URL}/v1/vms/${vmId}`);
      return vm.status === 200 && vm.body.state === state ? true : undefined;
    },
    20_000,
    200,
  );
}

describe('the operations listener, with real daemons and QEMU', () => {
  let fleet: Daemon;
  let agent: Daemon;

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    mkdirSync(slowQemuDir);
    const real = execFileSync('sh', ['-c', 'command -v qemu-system-x86_64']).toString().trim();
    writeFileSync(
      join(slowQemuDir, 'qemu-system-x86_64'),
      `#!/bin/sh\nsleep 3\nexec ${real} "$@"\n`,
    );
    chmodSync(join(slowQemuDir, 'qemu-system-x86_64'), 0o755);
    fleet = startFleetDaemon(
      { VM_FLEET_API_TOKEN: API_TOKEN, MONOTONIC_JUMP_MS: String(NODE_STALE_AFTER_MS + 2_000) },
      ['--require', JUMP],
    );
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    agent = await enrolled(
      startAgent({
        PATH: `${slowQemuDir}:${process.env.PATH}`,
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE,
        VM_WG_IP: '127.0.0.7',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, NODE),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: baseImage,
      }),
    );
  });

  afterAll(() => stopAllDaemons());

  it('refuses without the API token when one is set, and answers with it', async () => {
    const refused: Array<Record<string, string>> = [{}, { authorization: 'Bearer not-the-token' }];
    for (const headers of refused) {
      expect((await call('GET', `${OPS_URL}/v1/vms`, headers)).status).toBe(401);
      expect(
        (await call('POST', `${OPS_URL}/v1/vms/vm-0123456789abcdef/stop`, headers)).status,
      ).toBe(401);
      expect(
        (await call('GET', `${OPS_URL}/v1/vms/vm-0123456789abcdef/copies`, headers)).status,
      ).toBe(401);
    }
    const listed = await call('GET', `${OPS_URL}/v1/vms`);
    expect(listed.status).toBe(200);
  });

  it('answers bad input with a 4xx naming the VM and changes nothing: unknown, being created, stopped already', async () => {
    const unknown = await call('POST', `${OPS_URL}/v1/vms/vm-0123456789abcdef/stop`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toContain('vm-0123456789abcdef');
    const noCopies = await call('GET', `${OPS_URL}/v1/vms/vm-0123456789abcdef/copies`);
    expect([noCopies.status, noCopies.body.message]).toEqual([404, unknown.body.message]);

    const created = await call('POST', `${FLEET_URL}/v1/vms`, auth, {
      vm_type: 'ops',
      ram_mb: 64,
      vcpu_count: 1,
    });
    expect(created.status).toBe(201);
    const vmId = created.body.vm_id!;
    // QEMU starts 3 s late: the VM is still being created.
    const early = await call('POST', `${OPS_URL}/v1/vms/${vmId}/stop`, auth, { force: true });
    expect(early.status).toBe(409);
    expect(early.body.message).toContain(vmId);
    expect(early.body.message).toMatch(/being created/);
    await opsState(vmId, 'Running');
    expect(qemusOf(vmId)).toBe(1);

    const stop = await call('POST', `${OPS_URL}/v1/vms/${vmId}/stop`, auth, { force: true });
    expect(stop.status).toBe(202);
    await opsState(vmId, 'Stopped');
    expect(qemusOf(vmId)).toBe(0);
    const again = await call('POST', `${OPS_URL}/v1/vms/${vmId}/stop`, auth, { force: true });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain(vmId);
    expect(again.body.message).toMatch(/already stopped/);
    await opsState(vmId, 'Stopped');

    const start = await call('POST', `${OPS_URL}/v1/vms/${vmId}/start`);
    expect(start.status).toBe(202);
    await opsState(vmId, 'Running');
    expect(qemusOf(vmId)).toBe(1);
  });

  it('refuses an action on a VM of a silent node with a 409 naming the VM and its node, asking no agent', async () => {
    const [vm] = (await call('GET', `${OPS_URL}/v1/vms`)).body as unknown as Array<{
      vm_id: string;
    }>;
    expect(await agent.stop()).toEqual({ code: 0, signal: null });
    fleet.process.kill('SIGUSR2');
    await fleet.waitForOutput(new RegExp(`node ${NODE} dropped after`));
    const refused = await call('POST', `${OPS_URL}/v1/vms/${vm.vm_id}/stop`, auth, {
      force: true,
    });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain(vm.vm_id);
    expect(refused.body.message).toContain(NODE);
    // Its QEMU outlives the agent, untouched.
    expect(qemusOf(vm.vm_id)).toBe(1);
  });
});
