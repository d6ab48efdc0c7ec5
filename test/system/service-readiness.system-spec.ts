import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { NotifySocket } from '../support/notify-socket';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The units are Type=notify: each daemon tells systemd it is ready once it listens, through
 * NOTIFY_SOCKET. No systemd runs units on this machine (it is not PID 1), so a NotifySocket
 * stands in for systemd's.
 */
jest.setTimeout(40_000);

const workDir = scratchFolder('notify-');

describe('readiness: sd_notify on NOTIFY_SOCKET once listening', () => {
  const sockets: NotifySocket[] = [];

  async function notifySocket(name: string): Promise<NotifySocket> {
    const socket = new NotifySocket(join(workDir, name));
    sockets.push(socket);
    await socket.listening();
    return socket;
  }

  afterEach(async () => {
    await stopAllDaemons();
    for (const socket of sockets.splice(0)) socket.close();
  });

  it('the controller says READY=1, with its address as status, when it answers on 9203', async () => {
    const socket = await notifySocket('fleet.sock');
    const fleet = startFleetDaemon({ NOTIFY_SOCKET: socket.path });
    const received = await socket.ready();
    // Not before: once systemd hears READY=1, the controller already answers.
    expect((await fetch(`${FLEET_URL}/v1/fleet`)).status).toBe(200);
    expect(received).toContain('STATUS=listening on 0.0.0.0:9203');
    expect(fleet.output).not.toMatch(/could not tell systemd/);
  });

  it('the agent says READY=1, with its node and address as status, when it answers on VM_WG_IP', async () => {
    const fleet = startFleetDaemon();
    await fleet.waitForOutput(/listening on/);
    const socket = await notifySocket('agent.sock');
    const agent: Daemon = startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: 'vm-node-ready',
      VM_WG_IP: '127.0.0.2',
      VM_DISK_DIR: join(workDir, 'vm-node-ready'),
      NOTIFY_SOCKET: socket.path,
    });
    const received = await socket.ready();
    expect((await fetch('http://127.0.0.2:9204/v1/vms')).status).toBe(200);
    expect(received).toContain('STATUS=node vm-node-ready listening on 127.0.0.2:9204');
    expect(agent.output).not.toMatch(/could not tell systemd/);
  });

  it('a notify socket that cannot be reached is a warning: the daemon keeps serving', async () => {
    const fleet = startFleetDaemon({ NOTIFY_SOCKET: join(workDir, 'nobody-listens.sock') });
    await fleet.waitForOutput(
      /could not tell systemd that it is ready \(systemd-notify: .+\); a Type=notify unit will be stopped after its TimeoutStartSec/,
    );
    expect(fleet.alive).toBe(true);
    expect((await fetch(`${FLEET_URL}/v1/fleet`)).status).toBe(200);
  });
});
