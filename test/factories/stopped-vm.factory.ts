import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DesiredVmState } from '@app/fleet-domain';
import type { VmSidecar } from '../../apps/vm-host/src/vms/files/vm-sidecar';
import { vmSidecar } from './vm-sidecar.factory';

/**
 * A stopped VM's sidecar as an agent left it in `diskDir` (`run/<vm_id>/vm.json`, 0600): a
 * 64 MB, 1 vCPU web VM of tenant acme that ran under TCG, SSH published on 40022; the fields
 * given replace these.
 */
export function stoppedVmSidecar(
  diskDir: string,
  vmId: string,
  overrides: Partial<VmSidecar> = {},
): void {
  const runDir = join(diskDir, 'run', vmId);
  mkdirSync(runDir, { mode: 0o700 });
  const sidecar = vmSidecar({
    vm_id: vmId,
    tenant_id: 'acme',
    ram_alloc_mb: 64,
    vcpu_count: 1,
    host_ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
    started_at: '2026-08-06T11:00:01.000Z',
    driver: { kind: 'qemu', accel: 'tcg', pid: null },
    desired_state: DesiredVmState.Stopped,
    ...overrides,
  });
  writeFileSync(join(runDir, 'vm.json'), JSON.stringify(sidecar), { mode: 0o600 });
}

/**
 * A stopped VM as an agent left it: its sidecar (stoppedVmSidecar) and a 4 MiB qcow2 disk
 * (`disks/<vm_id>.qcow2`) holding `fill` bytes throughout, made by the real qemu-img from a raw
 * file kept beside (`<vm_id>.raw`, the data to compare a copy with).
 */
export function stoppedVmOnDisk(
  diskDir: string,
  vmId: string,
  { fill = 0x5a, sidecar = {} }: { fill?: number; sidecar?: Partial<VmSidecar> } = {},
): { disk: string; raw: string } {
  stoppedVmSidecar(diskDir, vmId, sidecar);
  const disk = join(diskDir, 'disks', `${vmId}.qcow2`);
  const raw = join(diskDir, `${vmId}.raw`);
  writeFileSync(raw, Buffer.alloc(4 * 1024 * 1024, fill));
  execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', raw, disk]);
  return { disk, raw };
}
