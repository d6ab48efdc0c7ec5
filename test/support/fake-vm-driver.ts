import type { HostPort } from '@app/fleet-domain';
import type {
  HostCapacity,
  HostFactsService,
} from '../../apps/vm-host/src/host-facts/host-facts.service';
import {
  DriverRecord,
  FoundVm,
  StartedVm,
  VmDriver,
  VmPlan,
  VmRunState,
  VmSpec,
} from '../../apps/vm-host/src/vms/vm-driver';

/**
 * A hypervisor a unit test drives by hand: each start waits until the test settles it; the
 * processes it "finds" are the ones the test put in `live`.
 */
export class FakeVmDriver extends VmDriver {
  readonly creates: Array<{
    spec: VmSpec;
    record: DriverRecord;
    keepPorts: readonly HostPort[];
    settle: (outcome: StartedVm | Error) => void;
  }> = [];
  readonly filesMade: VmSpec[] = [];
  readonly inspected: DriverRecord[] = [];
  readonly stopped: Array<{ vmId: string; record: DriverRecord }> = [];
  /** Live processes by vm id, as `find` reports them. */
  readonly live = new Map<string, FoundVm>();
  runState: VmRunState = 'running';
  planFailure?: Error;
  filesFailure?: Error;
  diskDirProblem?: Error;
  toolsChecked = false;

  checkDiskDir(): void {
    if (this.diskDirProblem) throw this.diskDirProblem;
  }

  checkTools(): Promise<void> {
    this.toolsChecked = true;
    return Promise.resolve();
  }

  plan({ preferKvm }: { preferKvm: boolean }): Promise<VmPlan> {
    if (this.planFailure) return Promise.reject(this.planFailure);
    return Promise.resolve({
      record: { kind: 'fake', fast: preferKvm, pid: null },
      summary: preferKvm ? 'fast' : 'slow',
    });
  }

  makeFiles(spec: VmSpec): Promise<void> {
    if (this.filesFailure) return Promise.reject(this.filesFailure);
    this.filesMade.push(spec);
    return Promise.resolve();
  }

  start(
    spec: VmSpec,
    record: DriverRecord,
    keepPorts: readonly HostPort[] = [],
  ): Promise<StartedVm> {
    return new Promise((resolve, reject) =>
      this.creates.push({
        spec,
        record,
        keepPorts,
        settle: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)),
      }),
    );
  }

  inspect(_vmId: string, record: DriverRecord): Promise<VmRunState> {
    this.inspected.push(record);
    return Promise.resolve(this.runState);
  }

  /** The base image's virtual size, as imageDiskBytes reports it: small, so any /tmp has room. */
  imageBytes = 1024 * 1024;
  readonly resumed: string[] = [];

  imageDiskBytes(): Promise<number> {
    return Promise.resolve(this.imageBytes);
  }

  /** A resumed VM runs again. */
  resume(vmId: string): Promise<void> {
    this.resumed.push(vmId);
    this.runState = 'running';
    return Promise.resolve();
  }

  find(vmIds: readonly string[]): Promise<Map<string, FoundVm>> {
    return Promise.resolve(new Map([...this.live].filter(([vmId]) => vmIds.includes(vmId))));
  }

  stop(vmId: string, record: DriverRecord): Promise<void> {
    this.stopped.push({ vmId, record });
    this.live.delete(vmId);
    return Promise.resolve();
  }

  /** Whether the guest powers down when asked (its process then leaves `live`). */
  powersDown = true;
  readonly poweredDown: string[] = [];
  readonly resets: string[] = [];
  /** Where consoleLog points; a test writes the file. */
  consoleFile = '/nonexistent/serial.log';

  /** While set, a power-down waits for it: the test decides when the guest is down. */
  powerDownGate?: Promise<void>;

  async powerDown(vmId: string): Promise<boolean> {
    this.poweredDown.push(vmId);
    await this.powerDownGate;
    if (this.powersDown) this.live.delete(vmId);
    return this.powersDown;
  }

  reset(vmId: string): Promise<void> {
    this.resets.push(vmId);
    return Promise.resolve();
  }

  consoleLog(): string {
    return this.consoleFile;
  }

  capConsoleLog(): Promise<void> {
    return Promise.resolve();
  }
}

/** Host facts whose memory and cores the test sets. */
export function fakeHostFacts(capacity: HostCapacity): HostFactsService {
  return { capacity: () => Promise.resolve({ ...capacity }) } as unknown as HostFactsService;
}
