import { Injectable, Logger, Optional } from '@nestjs/common';
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import * as si from 'systeminformation';
import { VmHostConfig } from '../config/vm-host.config';

export interface HostFacts {
  hostname: string;
  ram_total_mb: number;
  ram_used_mb: number;
  cpu_cores: number;
  cpu_load_pct: number;
  kvm_available: boolean;
  boot_id: string;
}

const MIB = 1024 * 1024;

/** Values that let a heartbeat still go out when a fact cannot be read: they promise nothing. */
const SAFE: HostFacts = {
  hostname: 'unknown-host',
  ram_total_mb: 0,
  ram_used_mb: 0,
  cpu_cores: 1,
  cpu_load_pct: 0,
  kvm_available: false,
  boot_id: 'unknown-boot',
};

/** Where the kernel tells what systeminformation does not; a provider, so tests use files of their own. */
@Injectable()
export class HostFactsPaths {
  bootId = '/proc/sys/kernel/random/boot_id';
  /** Read for both the heartbeat's kvm_available and whether VMs are started under KVM. */
  kvmDevice = '/dev/kvm';
  /** The process table (one folder per pid). */
  proc = '/proc';

  /** The agent's paths: the kernel's, but for the KVM device a test may name (VM_HOST_KVM_DEVICE). */
  static forConfig(config: VmHostConfig): HostFactsPaths {
    const paths = new HostFactsPaths();
    if (config.kvmDevice !== undefined) {
      paths.kvmDevice = config.kvmDevice;
      // An operator must see it set: it makes the agent report KVM it may not have.
      new Logger('HostFacts').warn(
        `node ${config.nodeId}: test-only hook VM_HOST_KVM_DEVICE=${config.kvmDevice} is set: KVM is judged usable by that file, not /dev/kvm`,
      );
    }
    return paths;
  }
}

/** What bounds the VMs a node can hold: its memory now and its logical cores. */
export interface HostCapacity {
  ram_total_mb: number;
  /** MemTotal - MemAvailable, as sampled now. */
  ram_used_mb: number;
  cpu_cores: number;
}

/** Reads what the heartbeat reports of this machine, from systeminformation and the kernel. */
@Injectable()
export class HostFactsService {
  private readonly logger = new Logger('HostFacts');
  /** Facts whose failure was already warned about, so a broken fact warns once, not every beat. */
  private readonly failing = new Set<string>();
  private cpuCores?: number;
  /** Why KVM failed at run time in this agent process (with the VM it failed), if it did. */
  private kvmFailure: string | null = null;

  constructor(
    private readonly paths: HostFactsPaths,
    @Optional() private readonly config?: VmHostConfig,
  ) {}

  async read(): Promise<HostFacts> {
    const [capacity, cpuLoad, kvm, bootId, name] = await Promise.all([
      this.capacity(),
      this.fact('cpu_load_pct', () => this.cpuLoad(), SAFE.cpu_load_pct),
      this.fact('kvm_available', () => this.kvmUsable(), SAFE.kvm_available),
      this.fact('boot_id', () => this.bootId(), SAFE.boot_id),
      this.fact('hostname', () => Promise.resolve(hostname()), SAFE.hostname),
    ]);
    return {
      hostname: name || SAFE.hostname,
      ...capacity,
      cpu_load_pct: cpuLoad,
      kvm_available: kvm,
      boot_id: bootId,
    };
  }

  /** Memory and cores only, for judging whether a new VM fits. */
  async capacity(): Promise<HostCapacity> {
    const [memory, cpuCores] = await Promise.all([
      this.fact('ram', () => this.memory(), { total: SAFE.ram_total_mb, used: SAFE.ram_used_mb }),
      this.fact('cpu_cores', () => this.logicalCores(), SAFE.cpu_cores),
    ]);
    return { ram_total_mb: memory.total, ram_used_mb: memory.used, cpu_cores: cpuCores };
  }

  /** Used = total - available, the memory the kernel could not hand to a new VM. */
  private async memory(): Promise<{ total: number; used: number }> {
    const memory = await si.mem();
    if (!(memory.total > 0)) throw new Error('total memory reads as 0');
    const total = Math.floor(memory.total / MIB);
    const available = Math.floor(memory.available / MIB);
    return { total, used: Math.max(0, total - available) };
  }

  private async logicalCores(): Promise<number> {
    this.cpuCores ??= (await si.cpu()).cores;
    if (!(this.cpuCores > 0)) throw new Error('no logical cores reported');
    return this.cpuCores;
  }

  private async cpuLoad(): Promise<number> {
    const load = (await si.currentLoad()).currentLoad;
    if (!Number.isFinite(load)) throw new Error('load is not a number');
    return Math.min(100, Math.max(0, Math.round(load * 10) / 10));
  }

  /**
   * What the heartbeat reports as kvm_available and what VM_ACCEL=auto runs VMs under: the
   * device is usable, VM_ACCEL is not tcg, and KVM has not failed at run time in this process.
   */
  async kvmUsable(): Promise<boolean> {
    if (this.config?.accel === 'tcg' || this.kvmFailure !== null) return false;
    return this.kvmDeviceUsable();
  }

  /**
   * Marks KVM failed at run time (a start that aborts under every CPU model, a guest stopped
   * with a KVM internal error): kvm_available is false, and VMs start under TCG, until the agent
   * restarts and tries KVM again. `reason` names the VM it failed with.
   */
  kvmFailed(reason: string): void {
    if (this.kvmFailure !== null) return;
    this.kvmFailure = reason;
    this.logger.warn(
      `node ${this.config?.nodeId ?? 'this node'}: KVM failed at run time: ${reason}; kvm_available is false until the agent restarts`,
    );
  }

  /** Why KVM failed at run time in this process, or null. */
  kvmFailureReason(): string | null {
    return this.kvmFailure;
  }

  /** KVM's device exists and this process may open it read-write. */
  async kvmDeviceUsable(): Promise<boolean> {
    try {
      await access(this.paths.kvmDevice, constants.R_OK | constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }

  private async bootId(): Promise<string> {
    const id = (await readFile(this.paths.bootId, 'utf8')).trim();
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id))
      throw new Error('unexpected boot_id format');
    return id;
  }

  private async fact<T>(name: string, read: () => Promise<T>, fallback: T): Promise<T> {
    try {
      const value = await read();
      if (this.failing.delete(name)) this.logger.log(`${name} readable again`);
      return value;
    } catch (error) {
      if (!this.failing.has(name)) {
        this.failing.add(name);
        this.logger.warn(
          `cannot read ${name} (${error instanceof Error ? error.message : String(error)}); reporting ${JSON.stringify(fallback)} until it can`,
        );
      }
      return fallback;
    }
  }
}
