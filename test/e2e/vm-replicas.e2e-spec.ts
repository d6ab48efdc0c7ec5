import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { signCopyGrant } from '@app/daemon';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { ReplicasService } from '../../apps/vm-host/src/replicas/replicas.service';
import { VmReplicationService } from '../../apps/vm-host/src/vms/copies/vm-replication.service';
import { VmSidecars } from '../../apps/vm-host/src/vms/files/vm-sidecars';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';
import { stoppedVmOnDisk } from '../factories/stopped-vm.factory';

/**
 * Copies of a VM on a peer node, over HTTP between two real agent apps in this process, with
 * the real qemu-img: a stopped VM (no QEMU runs) is copied from its file to the peer, which
 * takes it only with a copy grant signed with its own token for that VM.
 */
const SOURCE_TOKEN = 'source-token-3d9e1c7a5f2b8460';
const PEER_TOKEN = 'peer-token-9a8b7c6d5e4f3a2b';
const VM = 'vm-00000000000000e4';
const OTHER_VM = 'vm-00000000000000e5';
const HOUR_MS = 3_600_000;

function grant(
  overrides: Partial<{ token: string; vm: string; source: string; peer: string; exp: number }> = {},
): string {
  return signCopyGrant(overrides.token ?? PEER_TOKEN, {
    vm: overrides.vm ?? VM,
    source: overrides.source ?? 'node-a',
    peer: overrides.peer ?? 'node-b',
    expiresAtMs: overrides.exp ?? Date.now() + HOUR_MS,
  });
}

describe('copies of a VM on a peer node (replicas)', () => {
  let source: RunningVmHost;
  let peer: RunningVmHost;
  let disk: string;
  let replicasDir: string;

  beforeAll(async () => {
    peer = await startVmHostApp({ VM_NODE_ID: 'node-b', VM_FLEET_NODE_TOKEN: PEER_TOKEN });
    source = await startVmHostApp({ VM_NODE_ID: 'node-a', VM_FLEET_NODE_TOKEN: SOURCE_TOKEN });
    ({ disk } = stoppedVmOnDisk(source.app.get(VmHostConfig).diskDir, VM, {
      sidecar: { copies: { count: 1, every_s: 60 } },
    }));
    replicasDir = join(peer.app.get(VmHostConfig).diskDir, 'replicas');
  });

  afterAll(async () => {
    await source.close();
    await peer.close();
  });

  const written = (): string[] =>
    existsSync(join(replicasDir, VM)) ? readdirSync(join(replicasDir, VM)) : [];

  const start = (credential: string | undefined, vmId = VM) => {
    const call = request(peer.url).post(`/v1/replicas/${vmId}/transfers`);
    if (credential) void call.set('authorization', `Bearer ${credential}`);
    return call.send({
      kind: 'full',
      size_bytes: 1024,
      taken_at: '2026-08-06T11:00:00Z',
      vm_state: 'stopped',
    });
  };

  it('refuses every write and read without a grant for this VM and node, writing nothing', async () => {
    await start(undefined).expect(401);
    // The node token (the peer's own, or the source's) is no grant.
    await start(PEER_TOKEN).expect(401);
    await start(SOURCE_TOKEN).expect(401);
    // Signed with another node's token: a hostile node making its own.
    expect((await start(grant({ token: SOURCE_TOKEN })).expect(401)).body.message).toBe(
      'copy grant refused: grant not signed for this node',
    );
    expect((await start(grant({ peer: 'node-c' })).expect(401)).body.message).toBe(
      'copy grant refused: grant for another node',
    );
    expect((await start(grant({ exp: Date.now() - 1 })).expect(401)).body.message).toBe(
      'copy grant refused: grant expired',
    );
    // A grant for its own VM opens no other VM's copy.
    expect((await start(grant({ vm: OTHER_VM }))).status).toBe(403);
    await request(peer.url)
      .get(`/v1/replicas/${VM}`)
      .set('authorization', `Bearer ${grant({ vm: OTHER_VM })}`)
      .expect(403);
    await request(peer.url)
      .get(`/v1/replicas/${VM}`)
      .set('authorization', `Bearer ${PEER_TOKEN}`)
      .expect(401);
    expect(written()).toEqual([]);
    expect(existsSync(join(replicasDir, OTHER_VM))).toBe(false);
  });

  it('opens no other route with a grant', async () => {
    await request(peer.url).get('/v1/vms').set('authorization', `Bearer ${grant()}`).expect(401);
    await request(source.url)
      .put(`/v1/vms/${VM}/copy-plan`)
      .set('authorization', `Bearer ${grant()}`)
      .send({ every_s: 60, peers: [] })
      .expect(401);
  });

  it('refuses (507) a copy larger than the free room, naming the VM and the room', async () => {
    const answer = await request(peer.url)
      .post(`/v1/replicas/${VM}/transfers`)
      .set('authorization', `Bearer ${grant()}`)
      .send({
        kind: 'full',
        size_bytes: 2 ** 50,
        taken_at: '2026-08-06T11:00:00Z',
        vm_state: 'stopped',
      })
      .expect(507);
    expect(answer.body.message).toMatch(
      new RegExp(
        `^no room for vm ${VM}'s copy on this node: [\\d.]+ MB to receive, [\\d.]+ MB free in VM_DISK_DIR beyond its reserve$`,
      ),
    );
    expect(written()).toEqual([]);
  });

  it("copies the stopped VM from its file: the peer's copy equals its disk, reported in the peer's heartbeat", async () => {
    await request(source.url)
      .put(`/v1/vms/${VM}/copy-plan`)
      .set('authorization', `Bearer ${SOURCE_TOKEN}`)
      .send({
        every_s: 60,
        peers: [
          {
            node_id: 'node-b',
            address: `127.0.0.1:${peer.port}`,
            grant: grant(),
            expires_at: new Date(Date.now() + HOUR_MS).toISOString(),
          },
        ],
      })
      .expect(200);
    const replication = source.app.get(VmReplicationService);
    const sidecar = (await source.app.get(VmSidecars).of(VM))!;
    const plan = (await replication.planOf(VM))!;
    const [outcome] = await replication.copyVm(sidecar, plan);
    expect(outcome).toMatchObject({ sent: { kind: 'full', vm_state: 'stopped' } });

    const state = await request(peer.url)
      .get(`/v1/replicas/${VM}`)
      .set('authorization', `Bearer ${grant()}`)
      .expect(200);
    expect(state.body).toMatchObject({
      vm_id: VM,
      source_node_id: 'node-a',
      files: 1,
      last_file: '0000-full.qcow2',
    });
    const copy = join(replicasDir, VM, state.body.chain_id, '0000-full.qcow2');
    execFileSync('qemu-img', ['check', '-q', copy]);
    execFileSync('qemu-img', ['compare', '-q', disk, copy]);
    expect(await peer.app.get(ReplicasService).replicas()).toEqual([
      {
        vm_id: VM,
        source_node_id: 'node-a',
        copied_at: state.body.copied_at,
        size_bytes: state.body.size_bytes,
      },
    ]);
    // Nothing staged stays behind on the source.
    const staging = join(source.app.get(VmHostConfig).diskDir, 'copies-staging', VM, 'node-b');
    expect(readdirSync(staging)).toEqual(['state.json']);

    // Unchanged since: not copied again.
    expect(await replication.copyVm(sidecar, plan)).toEqual([
      { skipped: 'stopped, unchanged since its last copy' },
    ]);
  });

  it('a transfer cut short leaves the last good copy as it was, its partial file removed', async () => {
    const before = await request(peer.url)
      .get(`/v1/replicas/${VM}`)
      .set('authorization', `Bearer ${grant()}`)
      .expect(200);
    const auth = { authorization: `Bearer ${grant()}` };
    const started = await request(peer.url)
      .post(`/v1/replicas/${VM}/transfers`)
      .set(auth)
      .send({
        kind: 'incremental',
        chain_id: before.body.chain_id,
        index: 1,
        size_bytes: 4096,
        taken_at: '2026-08-06T11:01:00Z',
        vm_state: 'running',
      })
      .expect(201);
    const id = started.body.transfer_id as string;
    const chain = join(replicasDir, VM, before.body.chain_id);
    expect(readdirSync(chain).sort()).toEqual([
      '0000-full.qcow2',
      '0001.partial.qcow2',
      'manifest.json',
    ]);
    // Finished before all its bytes came: refused, nothing taken.
    await request(peer.url)
      .put(`/v1/replicas/${VM}/transfers/${id}?offset=0`)
      .set(auth)
      .set('content-type', 'application/octet-stream')
      .send(Buffer.alloc(1000))
      .expect(200);
    await request(peer.url).post(`/v1/replicas/${VM}/transfers/${id}/done`).set(auth).expect(409);
    // The rest is not a qcow2 image: refused by qemu-img's check, the partial file removed.
    await request(peer.url)
      .put(`/v1/replicas/${VM}/transfers/${id}?offset=1000`)
      .set(auth)
      .set('content-type', 'application/octet-stream')
      .send(Buffer.alloc(3096))
      .expect(200);
    await request(peer.url).post(`/v1/replicas/${VM}/transfers/${id}/done`).set(auth).expect(422);
    expect(readdirSync(chain).sort()).toEqual(['0000-full.qcow2', 'manifest.json']);
    const after = await request(peer.url).get(`/v1/replicas/${VM}`).set(auth).expect(200);
    expect(after.body).toEqual(before.body);
    execFileSync('qemu-img', ['compare', '-q', disk, join(chain, '0000-full.qcow2')]);
  });
});
