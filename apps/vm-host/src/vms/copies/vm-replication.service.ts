import { Injectable, Logger, Optional } from '@nestjs/common';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Clock } from '@app/daemon';
import {
  CHAIN_ID_PATTERN,
  CopyPlan,
  ID_PATTERN,
  MAX_REPLICA_CHAIN_FILES,
  ReplicaState,
  StartReplicaTransfer,
  VmState,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { VmSidecars } from '../files/vm-sidecars';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { VmNotOnNodeError, messageOf } from '../vms.errors';
import { CopyLocks } from './copy-locks';
import { PeerCallError, PeerTarget, PeerTransport, Throttle } from './peer-transport';
import { CopyThrottle } from './copy-throttle';
import { CopyShutdown } from './copy-shutdown';
import { replicaBitmapName } from './qmp-copy';
import { VmCopier } from './vm-copier';
import { createRequestOf, describedVm } from './backup-manifest-vm';

const PLAN_FILE = 'copy-plan.json';
const STATE_FILE = 'state.json';
const STAGED_FILE = 'staged.qcow2';

/** A copy taken but not yet in the peer's chain: sent again until it is (or it is lost). */
interface PendingCopy {
  kind: 'full' | 'incremental';
  chain_id?: string;
  index?: number;
  taken_at: string;
  vm_state: 'running' | 'stopped';
  /** The staged file is whole (a copy cut short by a killed agent is not: it is taken again). */
  complete?: boolean;
  /** A stopped VM's: its disk's mtime once copied (the copy adds the peer's bitmap to it). */
  disk_mtime_ms?: number;
}

/** What this node knows of its VM's copy on one peer, kept beside the staged file. */
interface PeerCopyState {
  /** The peer's chain this node's bitmap for the peer adds to, and its files then. */
  chain_id?: string;
  files?: number;
  /** The stopped VM's disk's mtime (ms) as its last copy into the peer's chain left it. */
  stopped_copy_ms?: number;
  /** Set before a copy begins, cleared once the peer took it. */
  pending?: PendingCopy;
}

/** How one copy to a peer went. */
export type PeerCopyOutcome =
  { sent: PendingCopy; bytes: number; fullBecause: string | null } | { skipped: string };

/**
 * Copies of this node's VMs to peer nodes, as the controller's copy plan for each VM says:
 * every `every_s`, a copy by QEMU's incremental backup (a persistent bitmap per peer; the
 * first copy full, and a full one by itself when the bitmap is missing or inconsistent), staged
 * under VM_DISK_DIR, sent to the peer (VM_COPY_MAX_MBPS), then removed. A send that fails is
 * tried again at the next interval: the staged file when it survived, else a full copy.
 */
@Injectable()
export class VmReplicationService {
  private readonly logger = new Logger('Copies');
  private readonly transport: PeerTransport;
  private readonly lastAttempts = new Map<string, number>();
  private readonly lastErrors = new Map<string, string>();
  private readonly underWay = new Set<string>();

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly copier: VmCopier,
    private readonly copyLocks: CopyLocks,
    private readonly clock: Clock,
    private readonly metrics: HostMetrics,
    /** Tests only: the peers answered in process. */
    @Optional() transport?: PeerTransport,
    /** The node's copy throttle, shared with the copies it serves and pulls. */
    @Optional() throttle?: CopyThrottle,
    /** Ends the copies under way as the agent stops. */
    @Optional() shutdown?: CopyShutdown,
  ) {
    this.transport =
      transport ??
      new PeerTransport(throttle ?? new Throttle(config.copyMaxMbps * 1_000_000), shutdown?.signal);
  }

  /** The controller's plan for the VM, kept privately beside its files (an agent restart keeps copying). */
  async setPlan(vmId: string, plan: CopyPlan): Promise<CopyPlan> {
    if (!(await this.sidecars.of(vmId))) throw new VmNotOnNodeError(vmId);
    const kept: CopyPlan = {
      every_s: plan.every_s,
      peers: plan.peers.map(({ node_id, address, grant, expires_at }) => ({
        node_id,
        address,
        grant,
        expires_at,
      })),
    };
    const path = join(this.files.runDir(vmId), PLAN_FILE);
    await writeFile(`${path}.tmp`, JSON.stringify(kept) + '\n', { mode: PRIVATE_FILE_MODE });
    await rename(`${path}.tmp`, path);
    // Peers no longer in the plan: what was staged for them goes.
    const dir = this.stagingDir(vmId);
    const planned = new Set(kept.peers.map(({ node_id }) => node_id));
    for (const peer of await readdir(dir).catch(() => [])) {
      if (!planned.has(peer)) await rm(join(dir, peer), { recursive: true, force: true });
    }
    return kept;
  }

  async planOf(vmId: string): Promise<CopyPlan | undefined> {
    try {
      const plan = JSON.parse(
        await readFile(join(this.files.runDir(vmId), PLAN_FILE), 'utf8'),
      ) as CopyPlan;
      return Array.isArray(plan.peers) && Number.isInteger(plan.every_s) ? plan : undefined;
    } catch {
      return undefined;
    }
  }

  /** The last copy failure of the VM (to any peer), or undefined. */
  lastError(vmId: string): string | undefined {
    return this.lastErrors.get(vmId);
  }

  /** Every VM whose plan's interval has passed since its last attempt, one after the other. */
  async copyDue(): Promise<void> {
    await this.removeStagingOfGoneVms();
    for (const sidecar of await this.sidecars.all()) {
      const vmId = sidecar.vm_id;
      if (this.sidecars.isStandIn(sidecar) || this.underWay.has(vmId)) continue;
      const plan = await this.planOf(vmId);
      if (!plan || plan.peers.length === 0) continue;
      const nowMs = this.clock.now();
      const last = this.lastAttempts.get(vmId);
      if (last !== undefined && nowMs - last < plan.every_s * 1000) continue;
      this.lastAttempts.set(vmId, nowMs);
      await this.copyVm(sidecar, plan).catch(() => undefined);
    }
  }

  /** The VM to each of its plan's peers, under its copy lock (one copy of a VM at a time). */
  async copyVm(sidecar: VmSidecar, plan: CopyPlan): Promise<PeerCopyOutcome[]> {
    const vmId = sidecar.vm_id;
    this.underWay.add(vmId);
    try {
      const outcomes: PeerCopyOutcome[] = [];
      let failure: Error | undefined;
      for (const peer of plan.peers) {
        if (Date.parse(peer.expires_at) <= this.clock.wallNow()) {
          outcomes.push({ skipped: `the grant for node ${peer.node_id} expired` });
          continue;
        }
        const target = { nodeId: peer.node_id, address: peer.address, grant: peer.grant };
        try {
          const outcome = await this.copyLocks.run(vmId, async () => {
            const startedMs = performance.now();
            const done = await this.copyToPeer(sidecar, target);
            const seconds = (performance.now() - startedMs) / 1000;
            return 'sent' in done ? { ...done, seconds } : done;
          });
          outcomes.push(outcome);
          if ('sent' in outcome) {
            this.lastErrors.delete(vmId);
            this.metrics.observeCopy(vmId, Date.parse(outcome.sent.taken_at));
            this.logger.log(
              `vm ${vmId}: copy to node ${peer.node_id} taken: ${outcome.sent.kind}, ${outcome.bytes} bytes sent in ${(outcome.seconds ?? 0).toFixed(1)} s${outcome.fullBecause ? ` (full: ${outcome.fullBecause})` : ''}`,
            );
          }
        } catch (error) {
          failure = error instanceof Error ? error : new Error(messageOf(error));
          const message = `copy to node ${peer.node_id} failed: ${messageOf(error)}`.slice(0, 1000);
          this.lastErrors.set(vmId, message);
          this.metrics.countCopyFailure(vmId);
          this.logger.warn(`vm ${vmId}: ${message} (tried again in ${plan.every_s} s)`);
        }
      }
      if (failure !== undefined) throw failure;
      return outcomes;
    } finally {
      this.underWay.delete(vmId);
    }
  }

  private async copyToPeer(sidecar: VmSidecar, peer: PeerTarget): Promise<PeerCopyOutcome> {
    const vmId = sidecar.vm_id;
    const dir = join(this.stagingDir(vmId), peer.nodeId);
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const staged = join(dir, STAGED_FILE);
    const state = await readState(dir);
    const stagedSize = (await stat(staged).catch(() => undefined))?.size;
    if (state.pending?.complete && stagedSize !== undefined) {
      return this.send(sidecar, peer, dir, state.pending, stagedSize, null);
    }
    // A copy taken and lost before the peer had it: its changes are in no bitmap any more.
    const lost = state.pending !== undefined;
    await rm(staged, { force: true });
    const remote = await this.transport.state(peer, vmId);
    const bitmap = replicaBitmapName(peer.nodeId);
    const vmState = await this.lifecycle.stateOf(sidecar);
    const takenAt = toRfc3339(this.clock.wallNow());
    let pending: PendingCopy;
    let fullBecause: string | null = null;
    try {
      if (vmState === VmState.Running) {
        const copierSays = await this.copier.prepareRunning(vmId, bitmap);
        fullBecause =
          copierSays ??
          (lost ? 'the last copy was lost before the peer took it' : null) ??
          whyNotAdd(state, remote, this.config.nodeId);
        if (fullBecause === null && remote.chain_id && remote.last_file) {
          pending = {
            kind: 'incremental',
            chain_id: remote.chain_id,
            index: remote.files,
            taken_at: takenAt,
            vm_state: 'running',
          };
          await writeState(dir, { ...state, pending });
          await this.copier.copyRunningIncremental(vmId, staged, remote.last_file, bitmap);
        } else {
          pending = { kind: 'full', taken_at: takenAt, vm_state: 'running' };
          await writeState(dir, { ...state, pending });
          this.logger.log(`vm ${vmId}: full copy to node ${peer.nodeId} begun (${fullBecause})`);
          await this.copier.copyRunningFull(vmId, staged, bitmap);
        }
      } else if (vmState === VmState.Stopped) {
        const changedMs = (await stat(this.files.disk(vmId))).mtimeMs;
        if (
          state.stopped_copy_ms !== undefined &&
          remote.chain_id === state.chain_id &&
          remote.source_node_id === this.config.nodeId &&
          changedMs <= state.stopped_copy_ms
        ) {
          return { skipped: 'stopped, unchanged since its last copy' };
        }
        fullBecause = 'the VM is stopped';
        pending = { kind: 'full', taken_at: takenAt, vm_state: 'stopped' };
        await writeState(dir, { ...state, pending });
        // Under the VM's lock: nothing starts it while its file is read.
        await this.lifecycle.locks.run(vmId, async () => {
          const now = await this.lifecycle.stateOf(sidecar);
          if (now !== VmState.Stopped) throw new Error(`vm ${vmId} is ${now}, not copied`);
          await this.copier.copyStopped(vmId, staged, bitmap);
          pending = { ...pending, disk_mtime_ms: (await stat(this.files.disk(vmId))).mtimeMs };
        });
      } else {
        return { skipped: `vm ${vmId} is ${vmState}` };
      }
    } catch (error) {
      await rm(staged, { force: true });
      throw error;
    }
    pending = { ...pending, complete: true };
    await writeState(dir, { ...state, pending });
    const size = (await stat(staged)).size;
    return this.send(sidecar, peer, dir, pending, size, fullBecause);
  }

  private async send(
    sidecar: VmSidecar,
    peer: PeerTarget,
    dir: string,
    pending: PendingCopy,
    size: number,
    fullBecause: string | null,
  ): Promise<PeerCopyOutcome> {
    const vmId = sidecar.vm_id;
    const staged = join(dir, STAGED_FILE);
    const { complete: _complete, disk_mtime_ms: _mtime, ...announced } = pending;
    const request: StartReplicaTransfer = {
      ...announced,
      size_bytes: size,
      vm: describedVm(sidecar),
      create_request: createRequestOf(sidecar),
    };
    let taken: ReplicaState;
    try {
      taken = await this.transport.send(peer, vmId, staged, size, request, (bytes) =>
        this.metrics.countCopyBytes(vmId, bytes),
      );
    } catch (error) {
      if (error instanceof PeerCallError && (error.status === 409 || error.status === 422)) {
        // The peer's chain is not the one this copy adds to, or it refused the file: the next
        // copy is full.
        await rm(staged, { force: true });
        await writeState(dir, {});
      }
      throw error;
    }
    await writeState(dir, {
      chain_id: taken.chain_id ?? undefined,
      files: taken.files,
      ...(pending.disk_mtime_ms !== undefined ? { stopped_copy_ms: pending.disk_mtime_ms } : {}),
    });
    await rm(staged, { force: true });
    return { sent: pending, bytes: size, fullBecause };
  }

  private stagingDir(vmId: string): string {
    if (!ID_PATTERN.test(vmId)) throw new Error(`not a vm id: ${vmId}`);
    return join(this.config.diskDir, 'copies-staging', vmId);
  }

  /** What was staged for VMs deleted since. */
  private async removeStagingOfGoneVms(): Promise<void> {
    const root = join(this.config.diskDir, 'copies-staging');
    const here = new Set(await this.files.listVmIds());
    for (const vmId of await readdir(root).catch(() => [])) {
      if (!here.has(vmId)) await rm(join(root, vmId), { recursive: true, force: true });
    }
  }
}

/**
 * Why the next copy cannot add to the peer's chain: it holds none, another node's or another
 * chain than the one this node's bitmap for it follows, or a chain long enough.
 */
function whyNotAdd(state: PeerCopyState, remote: ReplicaState, nodeId: string): string | null {
  if (!remote.chain_id || !remote.last_file) return 'the peer holds no copy';
  // Its last file names the next one's backing: only a chain's own names are taken.
  if (
    !CHAIN_ID_PATTERN.test(remote.chain_id) ||
    !/^\d{4}-(?:full|incremental)\.qcow2$/.test(remote.last_file) ||
    !Number.isInteger(remote.files) ||
    remote.files < 1
  ) {
    return "the peer's answer does not name a chain";
  }
  if (remote.source_node_id !== nodeId) return "the peer's copy came from another node";
  if (remote.chain_id !== state.chain_id || remote.files !== state.files) {
    return "the peer's chain is not the one this node's bitmap follows";
  }
  if (remote.files >= MAX_REPLICA_CHAIN_FILES)
    return `its chain has ${MAX_REPLICA_CHAIN_FILES} files`;
  return null;
}

async function readState(dir: string): Promise<PeerCopyState> {
  try {
    const state = JSON.parse(await readFile(join(dir, STATE_FILE), 'utf8')) as PeerCopyState;
    return typeof state === 'object' && state !== null ? state : {};
  } catch {
    return {};
  }
}

async function writeState(dir: string, state: PeerCopyState): Promise<void> {
  const path = join(dir, STATE_FILE);
  await writeFile(`${path}.tmp`, JSON.stringify(state) + '\n', { mode: PRIVATE_FILE_MODE });
  await rename(`${path}.tmp`, path);
}
