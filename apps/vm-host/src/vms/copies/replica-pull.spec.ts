import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../../test/support/configs';
import { CopyThrottle } from './copy-throttle';
import { ReplicaPuller } from './replica-pull';
import { VmCopier } from './vm-copier';
import { RestoreSourceError } from './vm-restores.errors';
import { VmDiskRoom } from '../admission/vm-disk-room';
import { VmSidecars } from '../files/vm-sidecars';

const VM = 'vm-00000000000000b7';
const CHAIN = '20261205T041700Z-3f2a';
const FULL = Buffer.from('the full copy');
const INCREMENTAL = Buffer.from('the changes since');

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const entry = (file: string, kind: string, bytes: Buffer) => ({
  file,
  kind,
  taken_at: '2026-12-05T04:17:00Z',
  size_bytes: bytes.length,
  sha256: sha(bytes),
});

/** Every file sound, and which backing each was checked with. */
class CheckingCopier {
  checked: Array<[string, string | null]> = [];
  check(file: string, backing: string | null): Promise<void> {
    this.checked.push([file.split('/').pop()!, backing]);
    return Promise.resolve();
  }
}

describe('ReplicaPuller: a copy pulled from the node that holds it', () => {
  let diskDir: string;
  let server: Server;
  let address: string;
  let copier: CheckingCopier;
  let puller: ReplicaPuller;
  /** What the holder answers: the chain, and each file's bytes. */
  let chain: object;
  let files: Record<string, Buffer>;
  let authorizations: string[];
  let stall: boolean;

  beforeEach(async () => {
    diskDir = await mkdtemp(join(tmpdir(), 'replica-pull-'));
    authorizations = [];
    stall = false;
    chain = {
      vm_id: VM,
      chain_id: CHAIN,
      files: [
        entry('0000-full.qcow2', 'full', FULL),
        entry('0001-incremental.qcow2', 'incremental', INCREMENTAL),
      ],
    };
    files = { '0000-full.qcow2': FULL, '0001-incremental.qcow2': INCREMENTAL };
    server = createServer((request, response) => {
      authorizations.push(request.headers.authorization ?? '');
      const url = request.url ?? '';
      if (url === `/v1/replicas/${VM}/read?point=${encodeURIComponent(`${CHAIN}/0001`)}`) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(chain));
        return;
      }
      const file = new RegExp(`^/v1/replicas/${VM}/read/files/${CHAIN}/(.+)$`).exec(url)?.[1];
      if (file && stall) {
        // Sends part of the file, then nothing more (never ends it).
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        response.write(files[file].subarray(0, 4));
        return;
      }
      if (file && files[file]) {
        response.writeHead(200, { 'content-type': 'application/octet-stream' });
        response.end(files[file]);
        return;
      }
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ statusCode: 404, message: 'no such thing\u0007 here' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    copier = new CheckingCopier();
    const config = vmHostConfig({ VM_NODE_ID: 'node-c', VM_DISK_DIR: diskDir });
    puller = new ReplicaPuller(config, copier as unknown as VmCopier, new CopyThrottle(config));
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(diskDir, { recursive: true, force: true });
  });

  const pull = (point = `${CHAIN}/0001`) =>
    puller.pull(VM, { node_id: 'node-b', address, grant: 'the.grant', backup_id: point });

  it('pulls the chain up to the point, each file checked with its backing the one before', async () => {
    const pulled = await pull();
    expect(authorizations.every((sent) => sent === 'Bearer the.grant')).toBe(true);
    expect((await readdir(pulled.dir)).sort()).toEqual([
      '0000-full.qcow2',
      '0001-incremental.qcow2',
    ]);
    expect(await readFile(pulled.top)).toEqual(INCREMENTAL);
    expect(copier.checked).toEqual([
      ['0000-full.qcow2', null],
      ['0001-incremental.qcow2', '0000-full.qcow2'],
    ]);
    expect(pulled.point).toEqual({
      source: 'replica',
      backup_id: `${CHAIN}/0001`,
      kind: 'incremental',
      taken_at: '2026-12-05T04:17:00Z',
      size_bytes: INCREMENTAL.length,
    });
    await puller.remove(pulled.dir);
    expect(await readdir(puller.root)).toEqual([]);
  });

  it.each([
    ['another VM', () => ({ ...chain, vm_id: 'vm-00000000000000b8' })],
    [
      'a file name that is a path',
      () => ({ ...chain, files: [{ ...entry('../../x', 'full', FULL) }] }),
    ],
    [
      'fewer files than the point',
      () => ({ ...chain, files: [entry('0000-full.qcow2', 'full', FULL)] }),
    ],
  ])('refuses a chain answer naming %s, writing nothing', async (_, answer) => {
    chain = answer();
    await expect(pull()).rejects.toThrow(
      new RestoreSourceError(
        `source.pull: node node-b answered no chain ${CHAIN}/0001 of vm ${VM}`,
      ),
    );
    await expect(readdir(puller.root)).rejects.toThrow(/ENOENT/);
  });

  it('refuses a file longer, or other, than its manifest says; nothing stays staged', async () => {
    files['0001-incremental.qcow2'] = Buffer.concat([INCREMENTAL, Buffer.from('more')]);
    await expect(pull()).rejects.toThrow(
      `source.pull: 0001-incremental.qcow2 of vm ${VM}'s copy from node node-b cut short: more than its ${INCREMENTAL.length} bytes`,
    );
    expect(await readdir(puller.root)).toEqual([]);
    files['0001-incremental.qcow2'] = Buffer.from('the chAnges since');
    await expect(pull()).rejects.toThrow('is not what its manifest says (size or sha256)');
    expect(await readdir(puller.root)).toEqual([]);
  });

  it("says the holder's refusal in a line of its own words, printable", async () => {
    await expect(pull(`${CHAIN}/0000`)).rejects.toThrow(
      `source.pull: node node-b answered the read of vm ${VM}'s copy with 404: no such thing? here`,
    );
  });

  it("gives a stalled pull up at its deadline (the read grant's expiry at the latest): nothing stays staged", async () => {
    stall = true;
    const startedMs = Date.now();
    await expect(
      puller.pull(
        VM,
        { node_id: 'node-b', address, grant: 'the.grant', backup_id: `${CHAIN}/0001` },
        Date.now() + 300,
      ),
    ).rejects.toThrow(`source.pull: vm ${VM}'s copy from node node-b not pulled in time`);
    // Far before the 60 s idle timeout.
    expect(Date.now() - startedMs).toBeLessThan(10_000);
    expect(await readdir(puller.root)).toEqual([]);
  });

  it("never takes the room promised to this node's own VMs' disks (the peer's rule)", async () => {
    const config = vmHostConfig({ VM_NODE_ID: 'node-c', VM_DISK_DIR: diskDir });
    const promised = new ReplicaPuller(
      config,
      copier as unknown as VmCopier,
      new CopyThrottle(config),
      { room: () => Promise.resolve({ committableBytes: 8 }) } as unknown as VmDiskRoom,
      { all: () => Promise.resolve([]) } as unknown as VmSidecars,
    );
    await expect(
      promised.pull(VM, {
        node_id: 'node-b',
        address,
        grant: 'the.grant',
        backup_id: `${CHAIN}/0001`,
      }),
    ).rejects.toThrow(
      /no room to pull .* 0\.0 MB free in VM_DISK_DIR beyond its reserve and the room promised/,
    );
    await expect(readdir(promised.root)).rejects.toThrow(/ENOENT/);
  });
});
