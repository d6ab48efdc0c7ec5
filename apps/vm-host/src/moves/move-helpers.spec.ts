import { DesiredVmState, VmRecord, VmState } from '@app/fleet-domain';
import type { VmSidecar } from '../vms/files/vm-sidecar';
import type { VmSidecars } from '../vms/files/vm-sidecars';
import type { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import type { VmDriver } from '../vms/vm-driver';
import { movedInHere } from './move-helpers';

/**
 * Whether a VM moved in here runs here, asked once this agent's memory of the move is gone (it
 * restarted): its old node, asking again, must hear the guest runs here, not "no such move".
 */
describe('a VM moved in, asked after the move ended', () => {
  const adopted = (): VmSidecar =>
    ({
      vm_id: 'web-1',
      desired_state: DesiredVmState.Running,
      started_at: '2026-12-05T13:00:00Z',
      error: null,
      driver: { kind: 'qemu' },
    }) as unknown as VmSidecar;

  function node(sidecar: VmSidecar | undefined, run = 'running', standIn = false) {
    const sidecars = {
      of: () => Promise.resolve(sidecar),
      isStandIn: () => standIn,
    } as unknown as VmSidecars;
    const lifecycle = {
      recordOf: (found: VmSidecar, state: VmState) =>
        ({ vm_id: found.vm_id, state }) as unknown as VmRecord,
    } as unknown as VmLifeCycles;
    const driver = { inspect: () => Promise.resolve(run) } as unknown as VmDriver;
    return movedInHere(sidecars, lifecycle, driver, 'web-1');
  }

  it('answers its record when it was adopted here and its QEMU runs', async () => {
    await expect(node(adopted())).resolves.toEqual({ vm_id: 'web-1', state: VmState.Running });
  });

  it('answers nothing for a move cut short (its mark kept), a VM not here, or a stand-in', async () => {
    await expect(node(undefined)).resolves.toBeUndefined();
    await expect(node({ ...adopted(), restoring: true })).resolves.toBeUndefined();
    await expect(node(adopted(), 'running', true)).resolves.toBeUndefined();
  });

  it('answers its record whatever became of it since: powered off, stopped, in error (its old node must not resume)', async () => {
    await expect(node(adopted(), 'stopped')).resolves.toEqual({
      vm_id: 'web-1',
      state: VmState.Stopped,
    });
    await expect(
      node({ ...adopted(), desired_state: DesiredVmState.Stopped, started_at: null }, 'stopped'),
    ).resolves.toEqual({ vm_id: 'web-1', state: VmState.Stopped });
    await expect(node({ ...adopted(), error: 'boom' }, 'stopped')).resolves.toEqual({
      vm_id: 'web-1',
      state: VmState.Error,
    });
  });
});
