import {
  DynamicModule,
  Global,
  Logger,
  type LoggerService,
  Module,
  type Type,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BearerTokens, Clock } from '@app/daemon';
import { VmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { HostFactsService } from '../../apps/vm-host/src/host-facts/host-facts.service';
import { HostMetrics } from '../../apps/vm-host/src/metrics/host-metrics.service';
import { DeletedDisks } from '../../apps/vm-host/src/vms/files/deleted-disks.service';
import { VmAdmissionService } from '../../apps/vm-host/src/vms/admission/vm-admission.service';
import { type StartedVm, VmDriver } from '../../apps/vm-host/src/vms/vm-driver';
import { VmFiles } from '../../apps/vm-host/src/vms/files/vm-files';
import { VmSidecar } from '../../apps/vm-host/src/vms/files/vm-sidecar';
import { CrashFailpoint } from '../../apps/vm-host/src/vms/failpoints/crash-failpoint';
import { VmLifeCycles } from '../../apps/vm-host/src/vms/life-cycle/vm-life-cycles';
import { VmActionsService } from '../../apps/vm-host/src/vms/actions/vm-actions.service';
import { VmReconciliationService } from '../../apps/vm-host/src/vms/reconciliation/vm-reconciliation.service';
import { VmRestartService } from '../../apps/vm-host/src/vms/reconciliation/vm-restart.service';
import { VmSidecars } from '../../apps/vm-host/src/vms/files/vm-sidecars';
import { VmsService } from '../../apps/vm-host/src/vms/vms.service';
import { VmsModule } from '../../apps/vm-host/src/vms/vms.module';
import { LEASE_CLOCK, VmFencing } from '../../apps/vm-host/src/vms/fencing/vm-fencing.service';
import { vmSidecar } from '../factories/vm-sidecar.factory';
import { FakeClock } from './fake-clock';
import { FakeVmDriver, fakeHostFacts } from './fake-vm-driver';
import { vmHostConfig } from './configs';

/** What the fake driver answers a start with, unless a test says otherwise. */
export const FAKE_STARTED: StartedVm = {
  record: { kind: 'fake', fast: false, pid: 4242 },
  hostPorts: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
  summary: 'fake pid 4242',
};

// Kept for the specs that take it from here; the builder is test/factories/'s.
export { createRequest } from '../factories/create-request.factory';

/** The HTTP-facing service over these parts, on a host with room for every VM a test makes. */
export async function roomyVmsService(
  files: VmFiles,
  driver: VmDriver,
  clock: FakeClock,
  metrics?: HostMetrics,
): Promise<VmsService> {
  const config = vmHostConfig({ VM_NODE_ID: 'node-a', VM_VCPU_OVERCOMMIT: '4' });
  const hostFacts = fakeHostFacts({ ram_total_mb: 65_536, ram_used_mb: 1_024, cpu_cores: 16 });
  return (await vmServices({ files, driver, clock, hostFacts, config, metrics })).vms;
}

/** The agent's VM services, sharing one lifecycle and one view of the sidecars. */
export interface VmServices {
  vms: VmsService;
  admission: VmAdmissionService;
  reconciliation: VmReconciliationService;
  lifecycle: VmLifeCycles;
  sidecars: VmSidecars;
  deletedDisks: DeletedDisks;
  restarts: VmRestartService;
  actions: VmActionsService;
  fencing: VmFencing;
}

/**
 * The VM services over these parts, built by Nest from `VmsModule` itself (so a constructor's
 * new dependency needs no edit here): the parts given replace the module's own, and nothing is
 * started (no module init, no jobs scheduled).
 */
export async function vmServices(parts: {
  files: VmFiles;
  driver: VmDriver;
  clock: Clock;
  hostFacts: HostFactsService;
  config: VmHostConfig;
  metrics?: HostMetrics;
}): Promise<VmServices> {
  const { files, driver, clock, hostFacts, config } = parts;
  const builder = Test.createTestingModule({
    imports: [VmsModule, VmTestCoreModule.with(config, clock, parts.metrics ?? new HostMetrics())],
  })
    .overrideProvider(VmFiles)
    .useValue(files)
    .overrideProvider(VmDriver)
    .useValue(driver)
    .overrideProvider(HostFactsService)
    .useValue(hostFacts)
    // The lease is measured on the test's clock too.
    .overrideProvider(LEASE_CLOCK)
    .useValue(clock);
  // compile() puts Nest's TestingLogger in place of the logger the unit tier collects lines
  // with (unit-spec.setup.ts); the one in place before is put back.
  const statics = Logger as unknown as { staticInstanceRef?: LoggerService };
  const before = statics.staticInstanceRef;
  const module = await builder.compile().finally(() => {
    if (before) Logger.overrideLogger(before);
  });
  const get = <T>(token: Type<T>): T => module.get(token, { strict: false });
  return {
    vms: get(VmsService),
    admission: get(VmAdmissionService),
    reconciliation: get(VmReconciliationService),
    lifecycle: get(VmLifeCycles),
    sidecars: get(VmSidecars),
    deletedDisks: get(DeletedDisks),
    restarts: get(VmRestartService),
    actions: get(VmActionsService),
    fencing: get(VmFencing),
  };
}

/**
 * The two parts a service outside the VM graph's core needs (the sidecars and the life cycle),
 * for a spec that builds that service by hand and may expect its constructor to throw.
 */
export function vmStateParts(parts: {
  files: VmFiles;
  driver: VmDriver;
  clock: Clock;
  config: VmHostConfig;
}): { sidecars: VmSidecars; lifecycle: VmLifeCycles } {
  const { files, driver, clock, config } = parts;
  const sidecars = new VmSidecars(files, driver);
  const lifecycle = new VmLifeCycles(
    files,
    driver,
    clock,
    new CrashFailpoint(config),
    undefined,
    config,
  );
  return { sidecars, lifecycle };
}

/** What the agent's app module gives every module (config, clock, metrics, tokens, the scheduler). */
@Global()
@Module({})
class VmTestCoreModule {
  static with(config: VmHostConfig, clock: Clock, metrics: HostMetrics): DynamicModule {
    return {
      module: VmTestCoreModule,
      providers: [
        { provide: VmHostConfig, useValue: config },
        { provide: Clock, useValue: clock },
        { provide: HostMetrics, useValue: metrics },
        // The agent's terminals take the node token the app module gives; none here (open).
        { provide: BearerTokens, useValue: new BearerTokens('service-vm-host', {}, ['node']) },
        SchedulerRegistry,
      ],
      exports: [VmHostConfig, Clock, HostMetrics, SchedulerRegistry, BearerTokens],
    };
  }
}

/**
 * What a spec of the VM services starts from: a prepared VM_DISK_DIR in a temporary folder, a
 * driver and a clock the test drives by hand, and every line the services log, as
 * `<level> <message>`.
 */
export interface VmBed {
  root: string;
  files: VmFiles;
  driver: FakeVmDriver;
  clock: FakeClock;
  logs: string[];
  /** The VMs' run folders, as the disk holds them now. */
  runFolders(): Promise<string[]>;
  /** Writes a VM's sidecar as an agent that is gone left it: 1 GB, 2 vCPUs, never started. */
  leftBehind(vmId: string, fields?: Partial<VmSidecar>): Promise<void>;
}

/** Sets a VmBed up, in beforeEach; `closeVmBed` in afterEach. */
export async function openVmBed(prefix: string): Promise<VmBed> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const files = new VmFiles(vmHostConfig({ VM_DISK_DIR: root }));
  await files.prepare();
  const logs: string[] = [];
  // Nest's own lines (the testing module's "dependencies initialized") are not the services'.
  const keep = (level: string) =>
    function (this: { context?: string }, message: unknown): void {
      if (this?.context !== 'InstanceLoader') logs.push(`${level} ${String(message)}`);
    };
  jest.spyOn(Logger.prototype, 'log').mockImplementation(keep('log'));
  jest.spyOn(Logger.prototype, 'warn').mockImplementation(keep('warn'));
  jest.spyOn(Logger.prototype, 'error').mockImplementation(keep('error'));
  return {
    root,
    files,
    driver: new FakeVmDriver(),
    clock: new FakeClock(),
    logs,
    runFolders: () => readdir(join(root, 'run')),
    leftBehind: async (vmId, fields = {}) => {
      await mkdir(files.runDir(vmId));
      const sidecar = vmSidecar({ vm_id: vmId, ...fields });
      await writeFile(join(files.runDir(vmId), 'vm.json'), JSON.stringify(sidecar));
    },
  };
}

export async function closeVmBed(bed: VmBed): Promise<void> {
  jest.restoreAllMocks();
  await rm(bed.root, { recursive: true, force: true });
}
