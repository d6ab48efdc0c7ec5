import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';
import { stoppedVmOnDisk } from '../factories/stopped-vm.factory';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The agent's backup routes over HTTP against the real agent app in this process, with the real
 * qemu-img: a stopped VM (a sidecar an operator's stop left, a small disk) is copied from its
 * file into VM_BACKUP_DIR. No QEMU runs.
 */
const NODE_TOKEN = 'node-token-3d9e1c7a5f2b8460';
const STOPPED_VM = 'vm-00000000000000e3';
const UNKNOWN_VM = 'vm-0123456789abcdef';
const auth = { authorization: `Bearer ${NODE_TOKEN}` };

interface Backups {
  vm_id: string;
  backups: Array<{ backup_id: string; kind: string; size_bytes: number; path: string }>;
  in_progress_since: string | null;
  last_error: string | null;
}

describe('agent VM backups', () => {
  let agent: RunningVmHost;
  let backupDir: string;
  let disk: string;

  beforeAll(async () => {
    backupDir = scratchFolder('vm-backups-e2e-');
    mkdirSync(backupDir, { recursive: true, mode: 0o700 });
    agent = await startVmHostApp({ VM_FLEET_NODE_TOKEN: NODE_TOKEN, VM_BACKUP_DIR: backupDir });
    ({ disk } = stoppedVmOnDisk(agent.app.get(VmHostConfig).diskDir, STOPPED_VM));
  });

  afterAll(() => agent.close());

  const backups = async (): Promise<Backups> =>
    (await request(agent.url).get(`/v1/vms/${STOPPED_VM}/backups`).set(auth).expect(200))
      .body as Backups;

  it('copies a stopped VM from its file: 202 at once, then listed full, readable by qemu-img alone', async () => {
    const begun = await request(agent.url)
      .post(`/v1/vms/${STOPPED_VM}/backups`)
      .set(auth)
      .expect(202);
    expect(begun.body).toMatchObject({ vm_id: STOPPED_VM, last_error: null });
    expect(begun.body.in_progress_since).toEqual(expect.any(String));

    let listed = await backups();
    for (const giveUpAt = Date.now() + 30_000; listed.in_progress_since !== null;) {
      if (Date.now() > giveUpAt) throw new Error('the backup never ended');
      await new Promise((resolve) => setTimeout(resolve, 100));
      listed = await backups();
    }
    expect(listed.last_error).toBeNull();
    expect(listed.backups).toEqual([
      expect.objectContaining({ kind: 'full', path: expect.stringMatching(/0000-full\.qcow2$/) }),
    ]);
    const [{ path, size_bytes }] = listed.backups;
    expect(path.startsWith(join(backupDir, STOPPED_VM))).toBe(true);
    expect(statSync(path).size).toBe(size_bytes);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(execFileSync('qemu-img', ['compare', '-q', disk, path], { encoding: 'utf8' })).toBe('');
    const manifest = JSON.parse(readFileSync(join(path, '..', 'manifest.json'), 'utf8')) as {
      files: Array<{ vm_state: string }>;
      create_request: object;
    };
    expect(manifest.files).toEqual([expect.objectContaining({ vm_state: 'stopped' })]);
    expect(manifest.create_request).toEqual({
      vm_type: 'web',
      ram_mb: 64,
      vcpu_count: 1,
      tenant_id: 'acme',
      ports: [],
    });
    // The chain's bitmap, added to the stopped disk: its next copy once it runs is incremental.
    const info = JSON.parse(
      execFileSync('qemu-img', ['info', '--output=json', disk], { encoding: 'utf8' }),
    ) as { 'format-specific': { data: { bitmaps?: Array<{ name: string }> } } };
    const chain = listed.backups[0].backup_id.split('/')[0];
    expect(info['format-specific'].data.bitmaps).toEqual([
      expect.objectContaining({ name: `ppn-copy-${chain}` }),
    ]);
  });

  it('answers 404 for a VM not here, 400 naming a bad vm_id, 401 without the node token', async () => {
    const unknown = await request(agent.url)
      .post(`/v1/vms/${UNKNOWN_VM}/backups`)
      .set(auth)
      .expect(404);
    expect(unknown.body.message).toBe(`vm ${UNKNOWN_VM} is not on this node`);
    await request(agent.url).get(`/v1/vms/${UNKNOWN_VM}/backups`).set(auth).expect(404);
    const bad = await request(agent.url).get('/v1/vms/-bad/backups').set(auth).expect(400);
    expect(bad.body.message).toContain('vm_id');
    await request(agent.url).post(`/v1/vms/${STOPPED_VM}/backups`).expect(401);
  });
});

describe('agent VM backups without VM_BACKUP_DIR', () => {
  let agent: RunningVmHost;

  beforeAll(async () => {
    agent = await startVmHostApp({ VM_FLEET_NODE_TOKEN: NODE_TOKEN });
    stoppedVmOnDisk(agent.app.get(VmHostConfig).diskDir, STOPPED_VM);
  });

  afterAll(() => agent.close());

  it('refuses a backup with 409, and lists none', async () => {
    const refused = await request(agent.url)
      .post(`/v1/vms/${STOPPED_VM}/backups`)
      .set(auth)
      .expect(409);
    expect(refused.body.message).toBe('backups are off on this node (VM_BACKUP_DIR is not set)');
    const listed = await request(agent.url)
      .get(`/v1/vms/${STOPPED_VM}/backups`)
      .set(auth)
      .expect(200);
    expect(listed.body).toEqual({
      vm_id: STOPPED_VM,
      backups: [],
      in_progress_since: null,
      last_error: null,
    });
  });
});
