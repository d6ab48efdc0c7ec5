import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { MOVE_GRANT_CONTEXT, signCopyGrant } from '@app/daemon';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';
import { stoppedVmOnDisk } from '../factories/stopped-vm.factory';

/**
 * A stopped VM moved cold between two real agent apps in this process, over HTTP, with the real
 * qemu-img and qemu-nbd (no QEMU runs): the new node's routes take only a move grant signed with
 * its own token for that VM (not a copy grant, not a node token); the disk arrives whole; the
 * VM is listed stopped there; the old node removes its files only when released.
 */
const SOURCE_TOKEN = 'source-token-5e1c7a3f9b2d8460';
const PEER_TOKEN = 'peer-token-1a2b3c4d5e6f7a8b';
const VM = 'vm-00000000000000f6';
const HOUR_MS = 3_600_000;

function grant(
  overrides: Partial<{ token: string; vm: string; context: string; exp: number }> = {},
): string {
  return signCopyGrant(
    overrides.token ?? PEER_TOKEN,
    {
      vm: overrides.vm ?? VM,
      source: 'node-a',
      peer: 'node-b',
      expiresAtMs: overrides.exp ?? Date.now() + HOUR_MS,
    },
    overrides.context ?? MOVE_GRANT_CONTEXT,
  );
}

describe("a VM's move between two agents", () => {
  let source: RunningVmHost;
  let peer: RunningVmHost;
  let raw: string;

  beforeAll(async () => {
    peer = await startVmHostApp({ VM_NODE_ID: 'node-b', VM_FLEET_NODE_TOKEN: PEER_TOKEN });
    source = await startVmHostApp({ VM_NODE_ID: 'node-a', VM_FLEET_NODE_TOKEN: SOURCE_TOKEN });
    ({ raw } = stoppedVmOnDisk(source.app.get(VmHostConfig).diskDir, VM, {
      sidecar: {
        host_ports: [],
        forwards: [{ host_port: 40122, guest_port: 22, protocol: 'tcp' }],
      },
    }));
  });

  afterAll(async () => {
    await source.close();
    await peer.close();
  });

  const incoming = (credential: string | undefined) => {
    const call = request(peer.url).post(`/v1/moves/${VM}/incoming`);
    if (credential) void call.set('authorization', `Bearer ${credential}`);
    return call.send({});
  };

  it('takes no copy grant, node token or grant for another VM on the incoming routes', async () => {
    await incoming(undefined).expect(401);
    await incoming(PEER_TOKEN).expect(401);
    expect(
      (await incoming(grant({ context: 'ppn-copy-grant:v1:' })).expect(401)).body.message,
    ).toBe('move grant refused: move grant not signed for this node');
    expect((await incoming(grant({ token: SOURCE_TOKEN })).expect(401)).body.message).toBe(
      'move grant refused: move grant not signed for this node',
    );
    expect((await incoming(grant({ exp: Date.now() - 1 })).expect(401)).body.message).toBe(
      'move grant refused: move grant expired',
    );
    await incoming(grant({ vm: 'vm-00000000000000f7' })).expect(403);
    // A move grant opens no other route.
    await request(peer.url).get('/v1/vms').set('authorization', `Bearer ${grant()}`).expect(401);
  });

  it('moves the stopped VM cold: its disk whole on the new node, stopped there; the old one removes it once released', async () => {
    const moved = await request(source.url)
      .post(`/v1/vms/${VM}/move-out`)
      .set('authorization', `Bearer ${SOURCE_TOKEN}`)
      .send({
        to: {
          node_id: 'node-b',
          address: `127.0.0.1:${peer.port}`,
          grant: grant(),
          expires_at: new Date(Date.now() + HOUR_MS).toISOString(),
        },
      });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({
      mode: 'cold',
      pause_ms: null,
      vm: { vm_id: VM, state: 'Stopped', tenant_id: 'acme' },
    });
    const peerDisk = join(peer.app.get(VmHostConfig).diskDir, 'disks', `${VM}.qcow2`);
    execFileSync('qemu-img', ['compare', '-q', '-f', 'raw', '-F', 'qcow2', raw, peerDisk]);
    const listed = await request(peer.url)
      .get('/v1/vms')
      .set('authorization', `Bearer ${PEER_TOKEN}`)
      .expect(200);
    expect(listed.body).toEqual([expect.objectContaining({ vm_id: VM, state: 'Stopped' })]);

    const sourceDisk = join(source.app.get(VmHostConfig).diskDir, 'disks', `${VM}.qcow2`);
    expect(existsSync(sourceDisk)).toBe(true);
    await request(source.url)
      .post(`/v1/vms/${VM}/move-release`)
      .set('authorization', `Bearer ${SOURCE_TOKEN}`)
      .expect(204);
    expect(existsSync(sourceDisk)).toBe(false);
    const left = await request(source.url)
      .get('/v1/vms')
      .set('authorization', `Bearer ${SOURCE_TOKEN}`)
      .expect(200);
    expect(left.body).toEqual([]);
  });
});
