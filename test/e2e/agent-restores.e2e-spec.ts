import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';
import { stoppedVmSidecar } from '../factories/stopped-vm.factory';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The agent's restore routes over HTTP against the real agent app in this process, with the
 * real qemu-img: a stopped VM backed up, its backups listed as restore points (also for a VM
 * id this node does not have: a folder copied from another node), and the refusals a restore
 * answers before anything is made. No QEMU runs (the system spec restores a real guest).
 */
const NODE_TOKEN = 'node-token-5e1c9a3f7b2d4680';
const VM = 'vm-00000000000000e7';
const auth = { authorization: `Bearer ${NODE_TOKEN}` };

/** A stopped VM's sidecar and a small disk, as an agent left them. */
function stoppedVm(diskDir: string): void {
  stoppedVmSidecar(diskDir, VM, {
    host_ports: [],
    forwards: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
  });
  execFileSync('qemu-img', [
    'create',
    '-q',
    '-f',
    'qcow2',
    join(diskDir, 'disks', `${VM}.qcow2`),
    '4M',
  ]);
}

const restoreBody = (fields: object = {}) => ({
  vm_id: VM,
  vm_type: 'web',
  ram_mb: 64,
  vcpu_count: 1,
  ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
  keep_host_ports: true,
  source: { replica: true },
  ...fields,
});

describe('agent restores', () => {
  let agent: RunningVmHost;
  let backupId: string;

  beforeAll(async () => {
    const backupDir = scratchFolder('agent-restores-e2e-');
    mkdirSync(backupDir, { recursive: true, mode: 0o700 });
    agent = await startVmHostApp({ VM_FLEET_NODE_TOKEN: NODE_TOKEN, VM_BACKUP_DIR: backupDir });
    stoppedVm(agent.app.get(VmHostConfig).diskDir);
    await request(agent.url).post(`/v1/vms/${VM}/backups`).set(auth).expect(202);
    for (const giveUpAt = Date.now() + 30_000; ;) {
      const { body } = await request(agent.url).get(`/v1/vms/${VM}/backups`).set(auth).expect(200);
      if ((body as { in_progress_since: string | null }).in_progress_since === null) {
        backupId = (body as { backups: Array<{ backup_id: string }> }).backups[0].backup_id;
        break;
      }
      if (Date.now() > giveUpAt) throw new Error('the backup never ended');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  afterAll(() => agent.close());

  it('lists the points it holds for the VM, with the VM as its manifest says', async () => {
    const { body } = await request(agent.url)
      .get(`/v1/restores/${VM}/points`)
      .set(auth)
      .expect(200);
    expect(body).toEqual({
      vm_id: VM,
      points: [
        {
          source: 'backup',
          backup_id: backupId,
          kind: 'full',
          taken_at: expect.any(String),
          size_bytes: expect.any(Number),
        },
      ],
      spec: {
        vm_type: 'web',
        ram_mb: 64,
        vcpu_count: 1,
        tenant_id: 'acme',
        ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
      },
    });
    const none = await request(agent.url)
      .get('/v1/restores/vm-0000000000000fff/points')
      .set(auth)
      .expect(200);
    expect(none.body).toEqual({ vm_id: 'vm-0000000000000fff', points: [], spec: null });
  });

  it('refuses a VM id it has (409), a source it does not hold (422), a bad body (400 naming the field), without the token (401)', async () => {
    const taken = await request(agent.url)
      .post('/v1/restores')
      .set(auth)
      .send(restoreBody({ source: { backup_id: backupId } }))
      .expect(409);
    expect(taken.body.message).toBe(`vm_id ${VM} is already taken on this node; no VM was made`);
    const other = 'vm-00000000000000e8';
    const noReplica = await request(agent.url)
      .post('/v1/restores')
      .set(auth)
      .send(restoreBody({ vm_id: other, source: { replica: true, vm_id: VM } }))
      .expect(422);
    expect(noReplica.body.message).toBe(`source.replica: this node holds no copy of vm ${VM}`);
    for (const [body, field] of [
      [restoreBody({ vm_id: other, source: { backup_id: '../../etc' } }), 'source.backup_id'],
      [restoreBody({ vm_id: other, source: {} }), 'source'],
      [restoreBody({ vm_id: other, ports: [] }), 'ports'],
      [restoreBody({ vm_id: '../x' }), 'vm_id'],
      [restoreBody({ vm_id: other, keep_host_ports: 'yes' }), 'keep_host_ports'],
    ] as const) {
      const refused = await request(agent.url)
        .post('/v1/restores')
        .set(auth)
        .send(body)
        .expect(400);
      expect(JSON.stringify(refused.body.message)).toContain(field);
    }
    await request(agent.url).post('/v1/restores').send(restoreBody()).expect(401);
    await request(agent.url).get(`/v1/restores/${VM}/points`).expect(401);
  });
});
