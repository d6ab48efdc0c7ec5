import type { Provider, Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { VmHostConfig } from '../config/vm-host.config';
import { QemuDriver } from './qemu/qemu.driver';
import { VmDriver } from './vm-driver';

/** The hypervisor drivers the agent has, by name. A second driver joins here. */
export const VM_DRIVERS = { qemu: QemuDriver } satisfies Record<string, Type<VmDriver>>;

export type VmDriverName = keyof typeof VM_DRIVERS;

/**
 * The driver this node runs VMs with. QEMU is the only one today; a second driver adds itself
 * to VM_DRIVERS and a VmHostConfig setting that names it, read here.
 */
export function vmDriverFor(_config: VmHostConfig): VmDriverName {
  return 'qemu';
}

/**
 * Binds VmDriver to the driver chosen from the configuration, built with the module's providers
 * (only the chosen one is ever made).
 */
export const VM_DRIVER_PROVIDER: Provider = {
  provide: VmDriver,
  inject: [VmHostConfig, ModuleRef],
  useFactory: (config: VmHostConfig, moduleRef: ModuleRef): Promise<VmDriver> =>
    moduleRef.create(VM_DRIVERS[vmDriverFor(config)]),
};
