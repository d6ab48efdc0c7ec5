import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DesiredVmState } from '@app/fleet-domain';
import { qmpServer } from '../../../../test/support/fake-qmp-server';
import type { CopyLocks } from '../vms/copies/copy-locks';
import type { VmFiles } from '../vms/files/vm-files';
import type { VmSidecar } from '../vms/files/vm-sidecar';
import type { VmSidecars } from '../vms/files/vm-sidecars';
import type { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { COPY_QMP_SOCKET } from '../vms/qemu/qemu-command-line';
import type { VmDriver } from '../vms/vm-driver';
import { MovesResumeService } from './moves-resume.service';

const VM = 'vm-00000000000000c3';

/**
 * The controller's word that the new node rolled a move back: the guest the move left paused on
 * its old node (its migration completed) runs again there; a guest paused for another reason,
 * or a VM moved out, is left as it is.
 */
describe('MovesResumeService: a guest left paused by a move runs again once the new node rolled it back', () => {
  let root: string;
  let server: Server | undefined;
  let qemuStatus: string;
  let commands: string[];
  let desired: DesiredVmState;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'moves-resume-'));
    qemuStatus = 'postmigrate';
    desired = DesiredVmState.Running;
    ({ server, commands } = await qmpServer(join(root, COPY_QMP_SOCKET), (command) => {
      if (command.execute === 'query-status') {
        return { return: { status: qemuStatus, running: qemuStatus === 'running' } };
      }
      if (command.execute === 'query-migrate') return { return: { status: 'completed' } };
      if (command.execute === 'query-jobs') return { return: [] };
      if (command.execute === 'cont') qemuStatus = 'running';
      return { return: {} };
    }));
  });

  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    await rm(root, { recursive: true, force: true });
  });

  function service(): MovesResumeService {
    const locks = { run: <T>(_key: string, work: () => Promise<T>) => work() };
    const sidecars = {
      of: () => Promise.resolve({ vm_id: VM, desired_state: desired } as VmSidecar),
      isStandIn: () => false,
    } as unknown as VmSidecars;
    const files = { runDir: () => root } as unknown as VmFiles;
    const driver = {
      inspect: () => Promise.resolve(qemuStatus === 'running' ? 'running' : 'stopped'),
      find: () => Promise.resolve(new Map([[VM, {}]])),
    } as unknown as VmDriver;
    return new MovesResumeService(
      sidecars,
      files,
      driver,
      { locks } as unknown as VmLifeCycles,
      locks as unknown as CopyLocks,
    );
  }

  it('resumes the guest its completed migration left paused', async () => {
    await expect(service().resume(VM)).resolves.toBe('resumed');
    expect(commands).toContain('cont');
    expect(qemuStatus).toBe('running');
  });

  it('leaves a guest that runs, or one paused for another reason, as it is', async () => {
    qemuStatus = 'running';
    await expect(service().resume(VM)).resolves.toBe('nothing');
    qemuStatus = 'io-error';
    await expect(service().resume(VM)).resolves.toBe('nothing');
    expect(commands).not.toContain('cont');
  });

  it('refuses a VM moved out of this node (it should not run here)', async () => {
    desired = DesiredVmState.Stopped;
    await expect(service().resume(VM)).rejects.toThrow('is moved out of this node');
    expect(commands).not.toContain('cont');
  });
});
