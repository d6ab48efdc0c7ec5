import { KVM_PROBATION_MS, KVM_PROBATION_POLL_MS, KvmStartSteps, KvmStarts } from './kvm-starts';

/** Time that moves only when the probation sleeps. */
class SteppedClock {
  ms = 0;
  now = (): number => this.ms;
  sleep = (ms: number): Promise<void> => {
    this.ms += ms;
    return Promise.resolve();
  };
}

/**
 * A QEMU as a fake: `refuse` are the CPU models it aborts with; once started, QMP answers the
 * statuses of `statuses` in turn (the last one from then on), and the console is written from
 * the poll `consoleFrom` on.
 */
function fakeQemu(options: {
  refuse?: string[];
  statuses?: string[];
  consoleFrom?: number;
  alive?: boolean;
}) {
  const launched: string[] = [];
  const stopped: number[] = [];
  let polls = 0;
  const statuses = options.statuses ?? ['running'];
  const steps: KvmStartSteps = {
    launch: (cpuModel) => {
      launched.push(cpuModel);
      return (options.refuse ?? []).includes(cpuModel)
        ? Promise.reject(new Error(`failed to set MSR 0x10a (${cpuModel})`))
        : Promise.resolve(1000 + launched.length);
    },
    status: () => Promise.resolve(statuses[Math.min(polls++, statuses.length - 1)]),
    consoleWritten: () => Promise.resolve(polls > (options.consoleFrom ?? Infinity)),
    alive: () => Promise.resolve(options.alive ?? true),
    stop: (pid) => {
      stopped.push(pid);
      return Promise.resolve();
    },
  };
  return { steps, launched, stopped, polls: () => polls };
}

describe('KvmStarts', () => {
  let clock: SteppedClock;
  let kvm: KvmStarts;

  beforeEach(() => {
    clock = new SteppedClock();
    kvm = new KvmStarts(clock);
  });

  it('starts with the host CPU, and needs no watching once a guest wrote to its console', async () => {
    const qemu = fakeQemu({ consoleFrom: 2 });
    expect(await kvm.start(qemu.steps)).toEqual({ pid: 1001, cpuModel: 'host' });
    expect(qemu.polls()).toBe(3);
    const later = fakeQemu({});
    expect(await kvm.start(later.steps)).toEqual({ pid: 1001, cpuModel: 'host' });
    expect(later.polls()).toBe(0);
  });

  it('goes down the CPU models on start failures and keeps the one that started for later VMs', async () => {
    const qemu = fakeQemu({ refuse: ['host'], consoleFrom: 0 });
    expect(await kvm.start(qemu.steps)).toEqual({ pid: 1002, cpuModel: 'host,-arch-capabilities' });
    expect(qemu.launched).toEqual(['host', 'host,-arch-capabilities']);
    expect(kvm.cpuModel).toBe('host,-arch-capabilities');
    const later = fakeQemu({});
    await kvm.start(later.steps);
    expect(later.launched).toEqual(['host,-arch-capabilities']);
  });

  it('says why when no CPU model starts, and stops nothing', async () => {
    const qemu = fakeQemu({ refuse: ['host', 'host,-arch-capabilities', 'qemu64'] });
    expect(await kvm.start(qemu.steps)).toEqual({
      failure:
        'could not start under KVM: host: failed to set MSR 0x10a (host); host,-arch-capabilities: failed to set MSR 0x10a (host,-arch-capabilities); qemu64: failed to set MSR 0x10a (qemu64)',
      ranOnce: false,
    });
    expect(qemu.stopped).toEqual([]);
  });

  it("throws a start failure that is the VM's own (not KVM's or the CPU's) at once, trying no other model", async () => {
    const qemu = fakeQemu({});
    qemu.steps.launch = (cpuModel) => {
      qemu.launched.push(cpuModel);
      return Promise.reject(
        new Error("Could not set up host forwarding rule 'tcp:10.8.0.21:2222-:22'"),
      );
    };
    await expect(kvm.start(qemu.steps)).rejects.toThrow('host forwarding rule');
    expect(qemu.launched).toEqual(['host']);
    expect(kvm.cpuModel).toBe('host');
  });

  it.each(['internal-error', 'guest-panicked'])(
    'stops a guest that goes to %s in its first seconds, and says so',
    async (broken) => {
      const qemu = fakeQemu({ refuse: ['host'], statuses: ['running', 'running', broken] });
      expect(await kvm.start(qemu.steps)).toEqual({
        failure: `stopped under KVM (CPU host,-arch-capabilities) with QMP status ${broken}`,
        ranOnce: true,
      });
      expect(qemu.stopped).toEqual([1002]);
      expect(clock.ms).toBe(2 * KVM_PROBATION_POLL_MS);
    },
  );

  it('watches a silent guest for the whole probation, then takes KVM as working', async () => {
    const qemu = fakeQemu({});
    expect(await kvm.start(qemu.steps)).toEqual({ pid: 1001, cpuModel: 'host' });
    expect(clock.ms).toBeGreaterThanOrEqual(KVM_PROBATION_MS);
    expect(clock.ms).toBeLessThan(KVM_PROBATION_MS + KVM_PROBATION_POLL_MS);
    const later = fakeQemu({ statuses: ['internal-error'] });
    expect(await kvm.start(later.steps)).toEqual({ pid: 1001, cpuModel: 'host' });
  });

  it('stops watching a QEMU that ended, without taking it as KVM working', async () => {
    const gone = fakeQemu({ alive: false });
    expect(await kvm.start(gone.steps)).toEqual({ pid: 1001, cpuModel: 'host' });
    expect(clock.ms).toBe(0);
    const next = fakeQemu({ statuses: ['running', 'internal-error'] });
    expect(await kvm.start(next.steps)).toMatchObject({ ranOnce: true });
  });
});
