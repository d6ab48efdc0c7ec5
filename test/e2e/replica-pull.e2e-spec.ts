import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { signCopyGrant, signCopyReadGrant } from '@app/daemon';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { ReplicaPuller } from '../../apps/vm-host/src/vms/copies/replica-pull';
import { VmReplicationService } from '../../apps/vm-host/src/vms/copies/vm-replication.service';
import { VmSidecars } from '../../apps/vm-host/src/vms/files/vm-sidecars';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';
import { stoppedVmOnDisk } from '../factories/stopped-vm.factory';

/**
 * A VM's copy pulled by a node that does not hold it (a restore there), over HTTP between
 * three real agent apps in this process with the real qemu-img: the source copies a stopped
 * VM to the holder; the target pulls the holder's chain with a read grant the controller would
 * issue (signed with the holder's token, naming the VM, the holder and the target). The read
 * route takes nothing else: no node token, no copy grant, no grant a hostile node signed.
 * Once read for a restore, the copy takes no copy grant issued before that moment.
 */
const SOURCE_TOKEN = 'source-token-1f2e3d4c5b6a7980';
const HOLDER_TOKEN = 'holder-token-0a1b2c3d4e5f6a7b';
const TARGET_TOKEN = 'target-token-9f8e7d6c5b4a3928';
const VM = 'vm-00000000000000d7';
const OTHER_VM = 'vm-00000000000000d8';
const HOUR_MS = 3_600_000;

function writeGrant(issuedAtMs: number | undefined): string {
  return signCopyGrant(HOLDER_TOKEN, {
    vm: VM,
    source: 'node-a',
    peer: 'node-b',
    expiresAtMs: Date.now() + HOUR_MS,
    ...(issuedAtMs === undefined ? {} : { issuedAtMs }),
  });
}

function readGrant(
  overrides: Partial<{ token: string; vm: string; holder: string; moves: boolean }> = {},
): string {
  return signCopyReadGrant(overrides.token ?? HOLDER_TOKEN, {
    vm: overrides.vm ?? VM,
    holder: overrides.holder ?? 'node-b',
    reader: 'node-c',
    issuedAtMs: Date.now(),
    expiresAtMs: Date.now() + HOUR_MS,
    moves: overrides.moves ?? true,
  });
}

describe("a VM's copy pulled by a node that does not hold it", () => {
  let source: RunningVmHost;
  let holder: RunningVmHost;
  let target: RunningVmHost;
  let disk: string;
  let chainId: string;

  beforeAll(async () => {
    holder = await startVmHostApp({ VM_NODE_ID: 'node-b', VM_FLEET_NODE_TOKEN: HOLDER_TOKEN });
    source = await startVmHostApp({ VM_NODE_ID: 'node-a', VM_FLEET_NODE_TOKEN: SOURCE_TOKEN });
    target = await startVmHostApp({ VM_NODE_ID: 'node-c', VM_FLEET_NODE_TOKEN: TARGET_TOKEN });
    ({ disk } = stoppedVmOnDisk(source.app.get(VmHostConfig).diskDir, VM, {
      fill: 0x3c,
      sidecar: { copies: { count: 1, every_s: 60 } },
    }));
    await request(source.url)
      .put(`/v1/vms/${VM}/copy-plan`)
      .set('authorization', `Bearer ${SOURCE_TOKEN}`)
      .send({
        every_s: 60,
        peers: [
          {
            node_id: 'node-b',
            address: `127.0.0.1:${holder.port}`,
            grant: writeGrant(Date.now() - 60_000),
            expires_at: new Date(Date.now() + HOUR_MS).toISOString(),
          },
        ],
      })
      .expect(200);
    const replication = source.app.get(VmReplicationService);
    const sidecar = (await source.app.get(VmSidecars).of(VM))!;
    const [outcome] = await replication.copyVm(sidecar, (await replication.planOf(VM))!);
    expect(outcome).toMatchObject({ sent: { kind: 'full' } });
    [chainId] = readdirSync(join(holder.app.get(VmHostConfig).diskDir, 'replicas', VM)).filter(
      (name) => name !== 'grant-floor.json',
    );
  });

  afterAll(async () => {
    await source.close();
    await holder.close();
    await target.close();
  });

  const read = (credential: string | undefined, vmId = VM) => {
    const call = request(holder.url).get(`/v1/replicas/${vmId}/read?point=${chainId}/0000`);
    if (credential) void call.set('authorization', `Bearer ${credential}`);
    return call;
  };

  it('refuses every read without a read grant for this VM and holder', async () => {
    await read(undefined).expect(401);
    // The node tokens are no grant; nor is the source's copy grant (it writes, it never reads).
    await read(HOLDER_TOKEN).expect(401);
    await read(TARGET_TOKEN).expect(401);
    expect((await read(writeGrant(Date.now())).expect(401)).body.message).toBe(
      'read grant refused: grant not signed for this node',
    );
    // A hostile node signing its own with its token (or another node's).
    expect((await read(readGrant({ token: TARGET_TOKEN })).expect(401)).body.message).toBe(
      'read grant refused: grant not signed for this node',
    );
    expect((await read(readGrant({ holder: 'node-c' })).expect(401)).body.message).toBe(
      'read grant refused: grant for another node',
    );
    await read(readGrant({ vm: OTHER_VM })).expect(403);
    await request(holder.url)
      .get(`/v1/replicas/${VM}/read/files/${chainId}/0000-full.qcow2`)
      .set('authorization', `Bearer ${readGrant({ token: SOURCE_TOKEN })}`)
      .expect(401);
    // A read grant writes nothing.
    await request(holder.url)
      .post(`/v1/replicas/${VM}/transfers`)
      .set('authorization', `Bearer ${readGrant()}`)
      .send({
        kind: 'full',
        size_bytes: 1024,
        taken_at: '2026-08-06T11:00:00Z',
        vm_state: 'stopped',
      })
      .expect(401);
    // Nothing but a chain's own files, by their names.
    await request(holder.url)
      .get(`/v1/replicas/${VM}/read/files/${chainId}/manifest.json`)
      .set('authorization', `Bearer ${readGrant()}`)
      .expect(400);
    await request(holder.url)
      .get(`/v1/replicas/${VM}/read/files/${chainId}/0001-incremental.qcow2`)
      .set('authorization', `Bearer ${readGrant()}`)
      .expect(404);
  });

  it("takes no copy grant issued before the copy was read for a restore (an old node's replay)", async () => {
    const start = (grant: string) =>
      request(holder.url)
        .post(`/v1/replicas/${VM}/transfers`)
        .set('authorization', `Bearer ${grant}`)
        .send({
          kind: 'full',
          size_bytes: 1024,
          taken_at: '2026-08-06T11:00:00Z',
          vm_state: 'stopped',
        });
    const issuedBefore = Date.now() - 30_000;
    // Read for a restore as a new VM: the original still runs and copies on.
    await read(readGrant({ moves: false })).expect(200);
    await start(writeGrant(issuedBefore)).expect(201);
    // Read for a restore that moves the VM: its old node's grant writes nothing more.
    const answer = await read(readGrant()).expect(200);
    expect(answer.body).toEqual({
      vm_id: VM,
      chain_id: chainId,
      files: [expect.objectContaining({ file: '0000-full.qcow2', kind: 'full' }) as object],
    });
    const stale = await start(writeGrant(issuedBefore)).expect(403);
    expect(stale.body.message).toMatch(/before the VM's last restore/);
    await start(writeGrant(undefined)).expect(403);
    await start(writeGrant(Date.now() + 1_000)).expect(201);
  });

  it('pulls the chain into a private staging folder, checked: the same disk', async () => {
    const puller = target.app.get(ReplicaPuller);
    const pulled = await puller.pull(VM, {
      node_id: 'node-b',
      address: `127.0.0.1:${holder.port}`,
      grant: readGrant(),
      backup_id: `${chainId}/0000`,
    });
    expect(pulled.point).toEqual(
      expect.objectContaining({ source: 'replica', backup_id: `${chainId}/0000`, kind: 'full' }),
    );
    expect(pulled.dir.startsWith(join(target.app.get(VmHostConfig).diskDir, 'pulls'))).toBe(true);
    expect(statSync(pulled.dir).mode & 0o777).toBe(0o700);
    expect(statSync(pulled.top).mode & 0o777).toBe(0o600);
    execFileSync('qemu-img', ['compare', '-q', disk, pulled.top]);
    await puller.remove(pulled.dir);
    expect(existsSync(pulled.dir)).toBe(false);
  });

  it("refuses a file that is not what the holder's manifest says, leaving nothing staged", async () => {
    const file = join(
      holder.app.get(VmHostConfig).diskDir,
      'replicas',
      VM,
      chainId,
      '0000-full.qcow2',
    );
    appendFileSync(file, Buffer.alloc(512, 1));
    const puller = target.app.get(ReplicaPuller);
    await expect(
      puller.pull(VM, {
        node_id: 'node-b',
        address: `127.0.0.1:${holder.port}`,
        grant: readGrant(),
        backup_id: `${chainId}/0000`,
      }),
    ).rejects.toThrow(/0000-full\.qcow2 of vm vm-00000000000000d7's copy from node node-b/);
    expect(readdirSync(puller.root)).toEqual([]);
  });
});
