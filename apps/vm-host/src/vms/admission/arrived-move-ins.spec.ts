import type { Server } from 'node:net';
import { join } from 'node:path';
import { VmState } from '@app/fleet-domain';
import { qmpServer } from '../../../../../test/support/fake-qmp-server';
import { FakeVmDriver, fakeHostFacts } from '../../../../../test/support/fake-vm-driver';
import { VmBed, closeVmBed, openVmBed, vmServices } from '../../../../../test/support/vm-services';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmFiles } from '../files/vm-files';
import { COPY_QMP_SOCKET } from '../qemu/qemu-command-line';
import { VmsService } from '../vms.service';

/**
 * The new node of a live move, its agent killed after its QEMU received the whole guest (and
 * maybe ran it: `cont`) but before the VM's `restoring` mark was dropped, started again: the
 * guest is this node's (its old node keeps its own paused until this node answers), so it is
 * taken over, not rolled back. A guest that had not arrived whole is rolled back as ever.
 */
describe('a live move in cut short, at the next start of the agent', () => {
  const vmId = 'vm-00000000000000aa';
  let bed: VmBed;
  let files: VmFiles;
  let driver: FakeVmDriver;
  let vms: VmsService;
  let server: Server | undefined;

  beforeEach(async () => {
    bed = await openVmBed('arrived-move-');
    ({ files, driver } = bed);
    ({ vms } = await vmServices({
      files,
      driver,
      clock: bed.clock,
      hostFacts: fakeHostFacts({ ram_total_mb: 24_576, ram_used_mb: 3_000, cpu_cores: 8 }),
      config: vmHostConfig({ VM_NODE_ID: 'node-b' }),
    }));
    // Its sidecar as acceptRestore leaves it until the take-over: marked, never started.
    await bed.leftBehind(vmId, {
      restoring: true,
      restored_from: 'a live move from node node-a',
      started_at: null,
      driver: { kind: 'fake', pid: null },
    });
    driver.live.set(vmId, {
      record: { kind: 'fake', pid: 4242 },
      hostPorts: [{ host_port: 40_022, guest_port: 22, protocol: 'tcp' }],
      rssMb: 512,
      summary: 'fake pid 4242',
    });
  });

  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    await closeVmBed(bed);
  });

  /** The incoming QEMU's copy QMP socket, answering as QEMU in that migration and run state. */
  async function incomingQemu(migration: string, run: { status: string; running: boolean }) {
    const qmp = await qmpServer(join(files.runDir(vmId), COPY_QMP_SOCKET), (command) => {
      if (command.execute === 'query-migrate') return { return: { status: migration } };
      if (command.execute === 'query-status') return { return: run };
      return { return: {} };
    });
    server = qmp.server;
    return qmp;
  }

  it('takes over a guest whose migration completed, its agent killed before it ran it: run, adopted, reported Running', async () => {
    const qmp = await incomingQemu('completed', { status: 'paused', running: false });
    await vms.prepare();
    expect(qmp.commands).toEqual(
      expect.arrayContaining(['query-migrate', 'nbd-server-stop', 'cont']),
    );
    expect(driver.stopped).toEqual([]);
    // Its TCP ports given to QEMU (an incoming QEMU may start without them).
    const hmp = qmp.calls
      .filter(({ execute }) => execute === 'human-monitor-command')
      .map((call) => call.arguments?.['command-line']);
    expect(hmp).toEqual([
      expect.stringMatching(/^hostfwd_remove net0 tcp:[^-]+:40022$/),
      expect.stringMatching(/^hostfwd_add net0 tcp:[^-]+:40022-:22$/),
    ]);
    const sidecar = await files.readSidecar(vmId);
    expect(sidecar?.restoring).toBeUndefined();
    expect(sidecar).toMatchObject({ driver: { kind: 'fake', pid: 4242 }, error: null });
    expect((await vms.report()).vms).toMatchObject([{ vm_id: vmId, state: VmState.Running }]);
    expect(bed.logs.join('\n')).toContain(
      `vm ${vmId}: its live move in was cut short after its QEMU received the whole guest (QEMU paused): taken over, it runs here`,
    );
  });

  it('adopts a guest its killed agent had run already (cont), without running it again', async () => {
    const qmp = await incomingQemu('completed', { status: 'running', running: true });
    await vms.prepare();
    expect(qmp.commands).not.toContain('cont');
    expect(driver.stopped).toEqual([]);
    expect((await vms.report()).vms).toMatchObject([{ vm_id: vmId, state: VmState.Running }]);
  });

  it('rolls back a move whose guest had not arrived whole: its QEMU stopped, nothing of it left', async () => {
    const qmp = await incomingQemu('active', { status: 'inmigrate', running: false });
    await vms.prepare();
    expect(qmp.commands).not.toContain('cont');
    // The roll-back runs in the background, as for any restore cut short.
    for (let i = 0; i < 200 && (await bed.runFolders()).length > 0; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(driver.stopped.map(({ vmId: stopped }) => stopped)).toEqual([vmId]);
    expect(await bed.runFolders()).toEqual([]);
    expect(bed.logs.join('\n')).toContain(
      'before the whole guest arrived (incoming migration active)',
    );
  });
});
