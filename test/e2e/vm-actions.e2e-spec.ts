import request from 'supertest';
import { WebSocketRefusedError, openWebSocket } from '@app/daemon';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { HostPorts } from '../../apps/vm-host/src/vms/ports/host-ports';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';
import { stoppedVmSidecar } from '../factories/stopped-vm.factory';

/**
 * The agent's action routes (stop, start, restart, console, life cycles), and a spawn it refuses,
 * over HTTP against the real agent app in this process. No VM runs here: the one VM is a stopped one, as a sidecar
 * an operator's stop left, so nothing starts QEMU.
 */
const NODE_TOKEN = 'node-token-3d9e1c7a5f2b8460';
const STOPPED_VM = 'vm-00000000000000e2';
const UNKNOWN_VM = 'vm-0123456789abcdef';
const auth = { authorization: `Bearer ${NODE_TOKEN}` };

describe('agent VM actions', () => {
  let agent: RunningVmHost;

  beforeAll(async () => {
    agent = await startVmHostApp({
      VM_FLEET_NODE_TOKEN: NODE_TOKEN,
      VM_BASE_IMAGE: '/nonexistent/ppn-vm-actions-base.qcow2',
    });
    stoppedVmSidecar(agent.app.get(VmHostConfig).diskDir, STOPPED_VM);
  });

  afterAll(() => agent.close());

  it('lists each VM with the accelerator it last ran under, from its sidecar', async () => {
    const response = await request(agent.url).get('/v1/vms').set(auth);
    expect(response.status).toBe(200);
    expect(response.body).toEqual([
      expect.objectContaining({ vm_id: STOPPED_VM, state: 'Stopped', accel: 'tcg' }),
    ]);
  });

  it("lists each VM's life cycle: state, the desired state, no restart planned", async () => {
    const response = await request(agent.url).get('/v1/vm-life-cycles').set(auth);
    expect(response.status).toBe(200);
    expect(response.body).toEqual([
      {
        vm_id: STOPPED_VM,
        state: 'Stopped',
        desired_state: 'stopped',
        operation: null,
        restart_count: 0,
        last_exit: null,
        reason: null,
        next_start_at: null,
      },
    ]);
    const one = await request(agent.url).get(`/v1/vm-life-cycles/${STOPPED_VM}`).set(auth);
    expect(one.body).toEqual(response.body[0]);
  });

  it('refuses to stop a stopped VM with a 409 naming it, and changes nothing', async () => {
    const response = await request(agent.url).post(`/v1/vms/${STOPPED_VM}/stop`).set(auth);
    expect(response.status).toBe(409);
    expect(response.body.message).toBe(`vm ${STOPPED_VM} is already stopped`);
    const life = await request(agent.url).get(`/v1/vm-life-cycles/${STOPPED_VM}`).set(auth);
    expect(life.body).toMatchObject({ state: 'Stopped', desired_state: 'stopped' });
  });

  it('answers 404 naming the VM for a VM this node does not have, on every action', async () => {
    for (const send of [
      () => request(agent.url).post(`/v1/vms/${UNKNOWN_VM}/stop`).send({ force: true }),
      () => request(agent.url).post(`/v1/vms/${UNKNOWN_VM}/start`),
      () => request(agent.url).post(`/v1/vms/${UNKNOWN_VM}/restart`),
      () => request(agent.url).get(`/v1/vms/${UNKNOWN_VM}/console`),
      () => request(agent.url).get(`/v1/vm-life-cycles/${UNKNOWN_VM}`),
    ]) {
      const response = await send().set(auth);
      expect(response.status).toBe(404);
      expect(response.body.message).toBe(`vm ${UNKNOWN_VM} is not on this node`);
    }
  });

  it('answers 400 naming the field for bad input, and changes nothing', async () => {
    const cases: Array<[request.Test, string]> = [
      [request(agent.url).post(`/v1/vms/${STOPPED_VM}/stop`).send({ timeout_s: 0 }), 'timeout_s'],
      [request(agent.url).post(`/v1/vms/${STOPPED_VM}/stop`).send({ timeout_s: 601 }), 'timeout_s'],
      [request(agent.url).post(`/v1/vms/${STOPPED_VM}/restart`).send({ force: 'yes' }), 'force'],
      [request(agent.url).get(`/v1/vms/${STOPPED_VM}/console?max_bytes=1048577`), 'max_bytes'],
      [request(agent.url).get(`/v1/vms/${STOPPED_VM}/console?from=-1`), 'from'],
      [request(agent.url).post('/v1/vms/..%2Fetc/stop'), 'vm_id'],
    ];
    for (const [sent, field] of cases) {
      const response = await sent.set(auth);
      expect(response.status).toBe(400);
      expect(response.body.message).toContain(field);
    }
    const life = await request(agent.url).get(`/v1/vm-life-cycles/${STOPPED_VM}`).set(auth);
    expect(life.body).toMatchObject({ desired_state: 'stopped', operation: null });
  });

  it("reads a VM's console (empty before its first boot here)", async () => {
    const response = await request(agent.url).get(`/v1/vms/${STOPPED_VM}/console`).set(auth);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ vm_id: STOPPED_VM, from: 0, next: 0, text: '', reset: false });
  });

  it("takes only the node's token", async () => {
    for (const headers of [{}, { authorization: 'Bearer not-the-token' }]) {
      const response = await request(agent.url).post(`/v1/vms/${STOPPED_VM}/start`).set(headers);
      expect(response.status).toBe(401);
    }
  });

  it('refuses a spawn (422) naming the VM and the range when no free host port is left, making nothing', async () => {
    const hostPorts = agent.app.get(HostPorts);
    const probe = hostPorts.probe;
    // The kernel's range all bound on VM_WG_IP (bind to port 0 refused).
    hostPorts.probe = {
      ...probe,
      anyFree: () =>
        Promise.reject(Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' })),
      pickRange: () => Promise.resolve('32768-60999'),
    };
    try {
      const vmId = 'vm-00000000000000e3';
      const response = await request(agent.url)
        .post('/v1/spawn')
        .set(auth)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1, prefer_kvm: false, vm_id: vmId });
      expect(response.status).toBe(422);
      expect(response.body.message).toBe(
        `no free tcp host port for vm ${vmId} on node in-process-node (127.0.0.1) in 32768-60999 (net.ipv4.ip_local_port_range): every port in it is bound; no VM was made`,
      );
      const listed = await request(agent.url).get('/v1/vms').set(auth);
      expect(listed.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual([STOPPED_VM]);
    } finally {
      hostPorts.probe = probe;
    }
  });

  describe('interactive console (WebSocket at /v1/vms/{vm_id}/terminal)', () => {
    async function refusalOf(
      path: string,
      headers: Record<string, string> = {},
    ): Promise<WebSocketRefusedError> {
      try {
        (await openWebSocket({ url: new URL(path, agent.url), timeoutMs: 5_000, headers })).close();
      } catch (error) {
        if (error instanceof WebSocketRefusedError) return error;
        throw error;
      }
      throw new Error('the WebSocket was opened');
    }

    it("takes the node's token only", async () => {
      expect(await refusalOf(`/v1/vms/${STOPPED_VM}/terminal`)).toMatchObject({ status: 401 });
      expect(
        await refusalOf(`/v1/vms/${STOPPED_VM}/terminal`, {
          authorization: 'Bearer not-the-token',
        }),
      ).toMatchObject({ status: 401 });
    });

    it("refuses any upgrade carrying an Origin: no browser opens an agent's console", async () => {
      for (const origin of ['http://evil.example', `http://${new URL(agent.url).host}`]) {
        expect(
          await refusalOf(`/v1/vms/${STOPPED_VM}/terminal`, { ...auth, Origin: origin }),
        ).toMatchObject({ status: 403 });
      }
    });

    it('refuses a VM it does not have, and one that is not running, in its fixed words', async () => {
      expect(await refusalOf(`/v1/vms/${UNKNOWN_VM}/terminal`, auth)).toMatchObject({
        status: 404,
        refusal: `vm ${UNKNOWN_VM} is not on this node`,
      });
      expect(await refusalOf(`/v1/vms/${STOPPED_VM}/terminal`, auth)).toMatchObject({
        status: 409,
        refusal: `vm ${STOPPED_VM} is not running`,
      });
      expect(await refusalOf('/v1/vms/..%2F..%2Fetc/terminal', auth)).toMatchObject({
        status: 404,
      });
      expect(await refusalOf('/v1/other', auth)).toMatchObject({ status: 404 });
    });
  });
});
