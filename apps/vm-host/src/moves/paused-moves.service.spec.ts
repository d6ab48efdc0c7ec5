import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { Server, createServer } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { HostPort } from '@app/fleet-domain';
import { MOVE_GRANT_CONTEXT, signCopyGrant } from '@app/daemon';
import { FakeClock } from '../../../../test/support/fake-clock';
import { qmpServer } from '../../../../test/support/fake-qmp-server';
import { HostMetrics } from '../metrics/host-metrics.service';
import type { CopyLocks } from '../vms/copies/copy-locks';
import type { VmFiles } from '../vms/files/vm-files';
import type { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { COPY_QMP_SOCKET } from '../vms/qemu/qemu-command-line';
import type { VmDriver } from '../vms/vm-driver';
import type { MeshPorts } from '../vms/ports/mesh-ports';
import type { VmsService } from '../vms/vms.service';
import type { MovesResumeService } from './moves-resume.service';
import { PausedMoves } from './paused-moves.service';

const VM = 'vm-00000000000000d4';

/**
 * The old node of a live move whose take-over the new node never confirmed: its guest stays
 * paused, the new node asked on in the background, also by the next agent after a restart
 * (the record in the VM's run folder), until it answers for sure.
 */
describe('PausedMoves: asking the new node on while the guest stays paused here', () => {
  let root: string;
  let qmp: NetServer;
  let peer: Server | undefined;
  /** What the fake new node answers `done` with: its status and body. */
  let answer: { status: number; body: object };
  let asked: number;
  const superseded: string[] = [];
  const resumed: string[] = [];
  /** What the routing mesh was told moved out: the VM, its ports and where to. */
  const handedOff: Array<[string, readonly HostPort[], { nodeId: string; wgIp: string }]> = [];
  const FORWARDS: HostPort[] = [{ host_port: 40080, guest_port: 80, protocol: 'tcp' }];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'paused-moves-'));
    await mkdir(join(root, 'run', VM), { recursive: true });
    ({ server: qmp } = await qmpServer(join(root, 'run', VM, COPY_QMP_SOCKET), (command) =>
      command.execute === 'query-status'
        ? { return: { status: 'postmigrate', running: false } }
        : { return: {} },
    ));
    superseded.length = 0;
    resumed.length = 0;
    handedOff.length = 0;
    asked = 0;
  });

  afterEach(async () => {
    await new Promise((resolve) => qmp.close(resolve));
    await new Promise((resolve) => (peer ? peer.close(resolve) : resolve(undefined)));
    peer = undefined;
    await rm(root, { recursive: true, force: true });
  });

  /** The new node's agent, listening (or not yet: its address refuses) on a port of its own. */
  async function newNode(): Promise<string> {
    peer = createServer((request, response) => {
      asked += 1;
      expect(request.url).toBe(`/v1/moves/${VM}/incoming/done`);
      response.writeHead(answer.status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => peer!.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(peer.address() as AddressInfo).port}`;
  }

  /**
   * An agent's PausedMoves over the same VM folder; `settled` resolves once its first decision is
   * carried out and it asks no more (the guest resumed here, or set aside and its ports handed
   * to the new node).
   */
  function agent() {
    const locks = { run: <T>(_key: string, work: () => Promise<T>) => work() };
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    // Superseded, the VM's files are set aside: its sidecar is no longer found.
    let setAside = false;
    const vms = {
      supersede: (ids: string[]) => {
        superseded.push(...ids);
        setAside = true;
        return Promise.resolve();
      },
    } as unknown as VmsService;
    const resumes = {
      resume: (id: string) => {
        resumed.push(id);
        return Promise.resolve('resumed');
      },
    } as unknown as MovesResumeService;
    const metrics = new HostMetrics();
    const observe = metrics.observeUnconfirmedMoves.bind(metrics);
    metrics.observeUnconfirmedMoves = (count) => {
      observe(count);
      if (count === 0) settle();
    };
    const clock = new FakeClock();
    const moves = new PausedMoves(
      {
        runDir: (id: string) => join(root, 'run', id),
        listVmIds: () => Promise.resolve([VM]),
        readSidecar: (id: string) =>
          Promise.resolve(setAside ? undefined : { vm_id: id, forwards: FORWARDS }),
      } as unknown as VmFiles,
      { locks } as unknown as VmLifeCycles,
      locks as unknown as CopyLocks,
      vms,
      resumes,
      { find: () => Promise.resolve(new Map([[VM, {}]])) } as unknown as VmDriver,
      clock,
      metrics,
      {
        movedOut: (...call: (typeof handedOff)[number]) => {
          handedOff.push(call);
          return Promise.resolve();
        },
      } as unknown as MeshPorts,
    );
    const pauses: number[] = [];
    moves.sleep = (ms) => {
      pauses.push(ms);
      clock.advance(ms);
      return new Promise((resolve) => setImmediate(resolve));
    };
    return { moves, settled, pauses, clock };
  }

  it('keeps the record (private) through an agent restart; the next agent asks on and, told the new node runs the guest, sets it aside here', async () => {
    // The new node's agent down: its port refuses (nothing listens there yet).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const first = agent();
    await first.moves.watch(VM, { nodeId: 'node-b', address: `127.0.0.1:${port}`, grant: 'g' });
    expect((await stat(join(root, 'run', VM, 'move-unconfirmed.json'))).mode & 0o777).toBe(0o600);
    while (first.pauses.length < 3) await new Promise((resolve) => setImmediate(resolve));
    expect(first.moves.unconfirmed()).toEqual([VM]);
    expect(superseded).toEqual([]);
    expect(resumed).toEqual([]);
    first.moves.onModuleDestroy();
    // Restarted: the next agent finds the record; the new node's agent is back and runs it.
    const record = JSON.parse(
      await readFile(join(root, 'run', VM, 'move-unconfirmed.json'), 'utf8'),
    ) as { address: string };
    answer = { status: 200, body: { vm_id: VM, state: 'Running' } };
    const address = await newNode();
    record.address = address;
    await writeFile(join(root, 'run', VM, 'move-unconfirmed.json'), JSON.stringify(record));
    const second = agent();
    await second.moves.onApplicationBootstrap();
    await second.settled;
    expect(superseded).toEqual([VM]);
    expect(resumed).toEqual([]);
    expect(asked).toBe(1);
    // Its ports forwarded to the new node at once, as after a move confirmed in time.
    expect(handedOff).toEqual([[VM, FORWARDS, { nodeId: 'node-b', wgIp: '127.0.0.1' }]]);
  });

  it('lets the guest run here again only on a definite no (404: no such move there)', async () => {
    answer = { status: 404, body: { message: 'no move of it here' } };
    const address = await newNode();
    const { moves, settled } = agent();
    await moves.watch(VM, { nodeId: 'node-b', address, grant: 'g' });
    await settled;
    expect(resumed).toEqual([VM]);
    expect(superseded).toEqual([]);
    expect(handedOff).toEqual([]);
  });

  it('holds the VM from its completed migration (asking nothing yet): an agent started meanwhile asks on; released, nothing is asked', async () => {
    answer = { status: 200, body: { vm_id: VM, state: 'Running' } };
    const address = await newNode();
    const first = agent();
    await first.moves.hold(VM, { nodeId: 'node-b', address, grant: 'g' });
    expect(first.moves.unconfirmed()).toEqual([]);
    expect(asked).toBe(0);
    // Killed before the new node's word: the next agent asks on.
    const second = agent();
    await second.moves.onApplicationBootstrap();
    await second.settled;
    expect(superseded).toEqual([VM]);
    // Settled in the foreground instead: no record, nothing asked at the next start.
    await first.moves.hold(VM, { nodeId: 'node-b', address, grant: 'g' });
    await first.moves.release(VM);
    const third = agent();
    await third.moves.onApplicationBootstrap();
    expect(third.moves.unconfirmed()).toEqual([]);
    expect(asked).toBe(1);
  });

  describe('once the move grant has expired (the new node refuses it then)', () => {
    /** A move grant as the controller signs it, expiring at `expiresAtMs`. */
    const grant = (expiresAtMs: number) =>
      signCopyGrant(
        'token-b',
        { vm: VM, source: 'node-a', peer: 'node-b', expiresAtMs },
        MOVE_GRANT_CONTEXT,
      );
    let errors: jest.SpyInstance;

    beforeEach(() => {
      answer = { status: 401, body: { message: 'move grant refused: grant expired' } };
      errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    });

    afterEach(() => errors.mockRestore());

    it("asks no more a minute after it (a grace for the new node's clock): the guest stays paused here, counted, and the error says so once", async () => {
      const address = await newNode();
      const { moves, pauses, clock } = agent();
      const expiresAtMs = clock.wallNow() + 60_000;
      await moves.watch(VM, { nodeId: 'node-b', address, grant: grant(expiresAtMs) });
      // Asked at 0, 5, 15, 35, 65 and 95 s; at 125 s the grant is past its minute of grace.
      while (pauses.length < 9) await new Promise((resolve) => setImmediate(resolve));
      expect(asked).toBe(6);
      expect(pauses.slice(6)).toEqual([30_000, 30_000, 30_000]);
      expect(moves.unconfirmed()).toEqual([VM]);
      expect(superseded).toEqual([]);
      expect(resumed).toEqual([]);
      expect(errors.mock.calls).toEqual([
        [
          expect.stringMatching(
            new RegExp(
              `^vm ${VM}: its move to node node-b \\(unconfirmed since \\S+\\) has a move grant that expired at ${new Date(expiresAtMs).toISOString()}, with no word on the take-over \\(6 asks by this agent\\): node node-b is asked no more \\(it refuses the grant\\); the guest stays paused here until the controller settles the move \\(superseded, or move-resume\\)$`,
            ),
          ),
        ],
      ]);
      moves.onModuleDestroy();
    });

    it('an agent started after it asks nothing; before it, the new node is asked as ever', async () => {
      answer = { status: 200, body: { vm_id: VM, state: 'Running' } };
      const address = await newNode();
      const first = agent();
      await first.moves.hold(VM, {
        nodeId: 'node-b',
        address,
        grant: grant(first.clock.wallNow() - 120_000),
      });
      await first.moves.onApplicationBootstrap();
      while (first.pauses.length < 2) await new Promise((resolve) => setImmediate(resolve));
      expect(asked).toBe(0);
      expect(first.moves.unconfirmed()).toEqual([VM]);
      expect(errors).toHaveBeenCalledTimes(1);
      first.moves.onModuleDestroy();
      // The same move with a grant still good: asked, and settled on the answer.
      const second = agent();
      await second.moves.hold(VM, {
        nodeId: 'node-b',
        address,
        grant: grant(second.clock.wallNow() + 60_000),
      });
      await second.moves.onApplicationBootstrap();
      await second.settled;
      expect(asked).toBe(1);
      expect(superseded).toEqual([VM]);
    });
  });
});
