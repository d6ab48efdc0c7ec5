import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { deriveNodeToken, signCopyGrant, signCopyReadGrant } from '@app/daemon';
import { CHAIN_ID_PATTERN } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  eventually,
  getJson,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { TestHost } from '../support/netns';
import { NodeMesh, emptied } from '../support/node-mesh';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';
import { COPY_WAIT_MS, guestAndKey, inNamespace, startCopiesNode } from '../support/copied-guests';

/**
 * Copies of a real guest (the Debian image) on a peer node: two built agents (each in a network
 * namespace of its own, with its disk folder and per-node token) and the built controller,
 * which plans the copy and issues the grant. A running VM copied full then incrementally, the
 * copy checked and equal to the stopped disk; a transfer cut midway (the peer node killed
 * whole) leaves the previous copy sound and the next run completes; after a power cut of the
 * source (every process of its node killed, its agent started again) the next copy is full by
 * itself; another node's token or a grant for another VM reads and writes nothing.
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 600_000);

const SECRET = 'replicas-node-secret-0123456789abcdef0123';
const SOURCE = 'copies-a';
const PEER = 'copies-b';
const SPAWN_PORT = 9204;
const workDir = scratchFolder('vm-replicas-');

function startNode(nodeId: string, host: TestHost, pubkey: string, env: NodeJS.ProcessEnv = {}) {
  const setUp = { workDir, pubkey, secret: SECRET };
  return startCopiesNode(nodeId, inNamespace(host), setUp, {
    VM_DISK_RETENTION_S: '0',
    VM_ACCEL: 'auto',
    ...env,
  });
}

/** The next line matching `pattern` the daemon prints after `from` (an output length). */
function nextLine(daemon: Daemon, from: number, pattern: RegExp, timeoutMs = COPY_WAIT_MS) {
  return eventually(
    `${pattern}`,
    () => Promise.resolve(pattern.exec(daemon.output.slice(from)) ?? undefined),
    timeoutMs,
    250,
  );
}

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number }>;
}

interface Manifest {
  chain_id: string;
  node_id: string;
  files: Array<{ file: string; kind: string }>;
}

describe('copies of a real guest on a peer node', () => {
  let source: Daemon;
  let peer: Daemon;
  let key: string;
  let pubkey: string;
  let mesh: NodeMesh | undefined;
  let sourceHost: TestHost;
  let peerHost: TestHost;
  const replicas = (vmId: string) => join(workDir, PEER, 'replicas', vmId);
  // The chain folders (beside them, grant-floor.json: the grant replay window).
  const chains = (vmId: string) =>
    existsSync(replicas(vmId))
      ? readdirSync(replicas(vmId))
          .filter((name) => CHAIN_ID_PATTERN.test(name))
          .sort()
      : [];
  const manifest = (vmId: string, chain: string): Manifest =>
    JSON.parse(readFileSync(join(replicas(vmId), chain, 'manifest.json'), 'utf8')) as Manifest;

  beforeAll(async () => {
    ({ key, pubkey } = guestAndKey(workDir, 'replicas'));
    mesh = NodeMesh.create(['ppn-rep-a', 'ppn-rep-b'], 73);
    [sourceHost, peerHost] = mesh.hosts;
    const fleet = startFleetDaemon({ VM_FLEET_NODE_SECRET: SECRET });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    peer = await startNode(PEER, peerHost, pubkey);
    source = await startNode(SOURCE, sourceHost, pubkey);
  });

  afterAll(async () => {
    await stopAllDaemons();
    mesh?.remove();
    killQemusUnder(workDir);
  });

  it('copies a running VM full then incrementally; a cut transfer and a power cut leave a sound copy; the copy equals the stopped disk', async () => {
    const createdAt = Date.now();
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        vm_type: 'rep',
        ram_mb: 512,
        vcpu_count: 1,
        preferred_node: SOURCE,
        copies: { count: 1, every_s: 30 },
      }),
    });
    expect(response.status).toBe(201);
    const vmId = ((await response.json()) as { vm_id: string }).vm_id;
    const running = await eventually(
      `${vmId} running`,
      async () =>
        (await getJson<ListedVm[]>('/v1/vms')).find(
          (vm) => vm.vm_id === vmId && vm.state === 'Running' && vm.host_ports.length > 0,
        ),
      60_000,
      200,
    );
    const sshPort = running.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    const serialLog = join(workDir, SOURCE, 'run', vmId, 'serial.log');
    const ssh = (command: string): Promise<string> =>
      sshRun(key, sourceHost.address, sshPort, command);
    const write = (name: string, mib: number): string =>
      `head -c ${mib * 1048576} /dev/urandom > ~/${name} && sync`;
    const taken = new RegExp(
      `vm ${vmId}: copy to node ${PEER} taken: (full|incremental), (\\d+) bytes sent in [\\d.]+ s(?: \\(full: ([^)]*)\\))?`,
    );

    // (a) The first copy is full, the next only what the guest wrote.
    let from = 0;
    const first = await nextLine(source, from, taken);
    expect(first[1]).toBe('full');
    await sshOnceUp(key, sourceHost.address, sshPort, write('a', 8), {
      since: createdAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog,
    });
    from = source.output.length;
    const second = await nextLine(source, from, taken);
    expect(second[1]).toBe('incremental');
    expect(Number(second[2])).toBeLessThan(Number(first[2]) / 4);
    const [chain] = chains(vmId);
    const held = manifest(vmId, chain);
    expect(held.node_id).toBe(SOURCE);
    expect(held.files[0]).toMatchObject({ file: '0000-full.qcow2', kind: 'full' });
    const lastFile = join(replicas(vmId), chain, held.files.at(-1)!.file);
    execFileSync('qemu-img', ['check', '-q', lastFile]);
    expect(statSync(replicas(vmId)).mode & 0o777).toBe(0o700);
    expect(statSync(lastFile).mode & 0o777).toBe(0o600);
    // (d) Another node's token, or a grant for another VM, reads and writes nothing.
    const sourceToken = deriveNodeToken(SECRET, SOURCE);
    const otherVmGrant = signCopyGrant(deriveNodeToken(SECRET, PEER), {
      vm: 'vm-0000000000000bad',
      source: SOURCE,
      peer: PEER,
      expiresAtMs: Date.now() + 3_600_000,
    });
    const forged = signCopyGrant(sourceToken, {
      vm: vmId,
      source: SOURCE,
      peer: PEER,
      expiresAtMs: Date.now() + 3_600_000,
    });
    const peerUrl = `http://${peerHost.address}:${SPAWN_PORT}/v1/replicas/${vmId}`;
    for (const credential of [sourceToken, deriveNodeToken(SECRET, PEER), forged, otherVmGrant]) {
      const headers = { authorization: `Bearer ${credential}` };
      const read = await fetch(peerUrl, { headers });
      const written = await fetch(`${peerUrl}/transfers`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          kind: 'full',
          size_bytes: 1024,
          taken_at: new Date().toISOString(),
          vm_state: 'running',
        }),
      });
      expect([read.status, written.status]).toEqual(
        credential === otherVmGrant ? [403, 403] : [401, 401],
      );
    }
    // Nor its read route (a restore's on another node: a read grant only): no node token, no
    // copy grant, no read grant a hostile node signed with its own token.
    const forgedRead = signCopyReadGrant(sourceToken, {
      vm: vmId,
      holder: PEER,
      reader: SOURCE,
      issuedAtMs: Date.now(),
      expiresAtMs: Date.now() + 3_600_000,
      moves: false,
    });
    for (const credential of [sourceToken, forged, forgedRead]) {
      const read = await fetch(`${peerUrl}/read?point=${chain}/0000`, {
        headers: { authorization: `Bearer ${credential}` },
      });
      expect(read.status).toBe(401);
    }
    expect(chains(vmId)).toEqual([chain]);

    // (b) A transfer cut midway: the peer killed while a slow copy is received.
    expect((await source.stop()).code).toBe(0);
    source = await startNode(SOURCE, sourceHost, pubkey, { VM_COPY_MAX_MBPS: '2' });
    await ssh(write('b', 24));
    const partial = await eventually(
      'a transfer under way on the peer',
      () =>
        Promise.resolve(
          readdirSync(join(replicas(vmId), chain)).find(
            (name) =>
              name.endsWith('.partial.qcow2') &&
              statSync(join(replicas(vmId), chain, name)).size > 4 * 1048576,
          ),
        ),
      COPY_WAIT_MS,
      100,
    );
    expect(partial).toMatch(/^\d{4}\.partial\.qcow2$/);
    // The copy held as the transfer runs: only its end would change it.
    const before = readFileSync(join(replicas(vmId), chain, 'manifest.json'), 'utf8');
    const heldFile = join(
      replicas(vmId),
      chain,
      (JSON.parse(before) as Manifest).files.at(-1)!.file,
    );
    // The peer node killed whole: every process of its namespace.
    expect(peerHost.killAll()).toContain(peer.process.pid);
    await peer.waitForExit();
    await emptied(peerHost);
    from = source.output.length;
    await nextLine(source, from, new RegExp(`vm ${vmId}: copy to node ${PEER} failed: `));
    expect(readFileSync(join(replicas(vmId), chain, 'manifest.json'), 'utf8')).toBe(before);
    execFileSync('qemu-img', ['check', '-q', heldFile]);
    // The next run completes.
    peer = await startNode(PEER, peerHost, pubkey);
    from = source.output.length;
    const resumed = await nextLine(source, from, taken);
    expect(resumed[1]).toBe('incremental');
    expect(readdirSync(join(replicas(vmId), chain)).filter((n) => n.includes('partial'))).toEqual(
      [],
    );

    // (c) A power cut of the source: every process of its node killed at once (its agent and
    // the VM's QEMU among them), the agent started again.
    const [pid] = liveQemusUnder(workDir)
      .filter(({ args }) => args.includes(`guest=${vmId}`))
      .map((qemu) => qemu.pid);
    expect(sourceHost.killAll()).toEqual(expect.arrayContaining([source.process.pid, pid]));
    await source.waitForExit();
    await emptied(sourceHost);
    const cutAt = Date.now();
    source = await startNode(SOURCE, sourceHost, pubkey);
    const full = await nextLine(source, 0, taken);
    expect(full[1]).toBe('full');
    expect(full[3]).toMatch(/bitmap/);
    await sshOnceUp(key, sourceHost.address, sshPort, 'true', {
      since: cutAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog,
    });
    // Frozen, so nothing changes after the next copy: it then holds the stopped disk.
    await ssh(`${write('c', 4)} && sudo fsfreeze --freeze /`);
    from = source.output.length;
    expect((await nextLine(source, from, taken))[1]).toBe('incremental');
    const [newest] = chains(vmId).slice(-1);
    expect(newest).not.toBe(chain);
    expect(chains(vmId)).toEqual([newest]);
    const kept = join(workDir, 'kept-chain');
    cpSync(join(replicas(vmId), newest), kept, { recursive: true });
    const stopped = await ppnFleet(['vm', 'stop', vmId, '--force', '--wait'], {}, 120_000);
    expect(stopped.code).toBe(0);
    const copyFiles = JSON.parse(readFileSync(join(kept, 'manifest.json'), 'utf8')) as Manifest;
    expect(copyFiles.node_id).toBe(SOURCE);
    const restored = join(workDir, 'restored.qcow2');
    execFileSync('qemu-img', [
      'convert',
      '-O',
      'qcow2',
      join(kept, copyFiles.files.at(-1)!.file),
      restored,
    ]);
    const compared = execFileSync(
      'qemu-img',
      ['compare', '-U', join(workDir, SOURCE, 'disks', `${vmId}.qcow2`), restored],
      { encoding: 'utf8' },
    );
    expect(compared.trim()).toBe('Images are identical.');
  });
});
