import { startFleetDaemon, stopAllDaemons } from '../support/daemons';
import { EtcdControllers, controllerUrl } from '../support/etcd-controllers';
import { EtcdServer } from '../support/etcd-server';
import { TestHost } from '../support/netns';

jest.setTimeout(120_000);

/**
 * One VM_FLEET_COPIES per etcd fleet: the agents fence, and the leader recovers, the VMs
 * without copies of their own by it, so controllers disagreeing could run one VM twice.
 */
describe('controllers on one etcd with VM_FLEET_COPIES', () => {
  let etcd: EtcdServer;
  let other: TestHost;

  beforeAll(async () => {
    other = TestHost.create('ppn-copies-b', 71);
    etcd = await EtcdServer.start([other.hostAddress]);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await etcd?.stop();
    other?.remove();
  });

  it('start beside the first with its value, and a controller with another value refuses to start, saying how to fix it (exit 2)', async () => {
    const first = startFleetDaemon({
      VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint,
      VM_FLEET_COPIES: '2',
    });
    await first.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd at /);

    // Unset: the default, 1.
    for (const env of [{ VM_FLEET_COPIES: '1' }, {}]) {
      const differing = startFleetDaemon({ VM_FLEET_ETCD_ENDPOINTS: etcd.endpoint, ...env });
      expect(await differing.waitForExit(20_000)).toEqual({ code: 2, signal: null });
      expect(differing.output).toContain(
        "service-vm-fleet: configuration error: VM_FLEET_COPIES is 1 here but 2 for this fleet (ppn-fleet/settings/VM_FLEET_COPIES in etcd, written by the first controller to start on it): every controller on one etcd must have the same value (the agents fence, and the leader recovers, the VMs without copies of their own by it). Set VM_FLEET_COPIES=2 here, or, to change the fleet's value, stop every controller, run `etcdctl del ppn-fleet/settings/VM_FLEET_COPIES`, then start them all with the new value",
      );
    }

    // The same value, on a host of its own (port 9203): it starts, and serves beside the first.
    const second = await new EtcdControllers(etcd).start(other, { VM_FLEET_COPIES: '2' });
    expect((await fetch(`${controllerUrl(other)}/v1/nodes`)).status).toBe(200);
    expect(await second.stop()).toEqual({ code: 0, signal: null });
    expect(await first.stop()).toEqual({ code: 0, signal: null });
  });
});
