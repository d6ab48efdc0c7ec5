import { Logger } from '@nestjs/common';
import type { HostPort } from '@app/fleet-domain';
import { MeshListener } from '../mesh/mesh-listener';
import { MeshPorts } from '../vms/ports/mesh-ports';
import { hostForwards } from '../vms/qemu/qemu-command-line';
import type { QmpSession } from '../vms/qemu/qmp.client';

/** The user network's id on every VM's command line (qemuArgs: `-netdev user,id=net0,...`). */
const NETDEV_ID = 'net0';

/** What the bridge needs of the node. */
export interface BridgeNode {
  nodeId: string;
  wgIp: string;
  /** VM_ROUTING_MESH: without it, no port is forwarded meanwhile. */
  routingMesh: boolean;
}

/**
 * A VM's published TCP ports while it moves in live. Its QEMU here waits paused for the whole
 * mirror and migration, so it does not take them yet (launchIncoming leaves them off its
 * command line): a connection it accepted would hang until the switchover. Meanwhile each port
 * the routing mesh forwarded to the VM's old node (a route the mesh had judged) is still
 * forwarded there from here, so this node's address keeps serving the VM; at the take-over
 * (`handOver`) those listeners close and QEMU takes the ports (`hostfwd_add`), a few
 * milliseconds without a listener. Rolled back: `close()`.
 */
export class MovePortBridge {
  private constructor(
    private readonly node: BridgeNode,
    private readonly vmId: string,
    private readonly deferred: readonly HostPort[],
    private readonly listeners: MeshListener[],
    private readonly logger: Logger,
  ) {}

  /**
   * The VM's TCP `forwards` deferred; those the mesh let go of for this VM forwarded to where it
   * sent them, on this node's mesh address. A port it cannot bind is left unserved until the
   * take-over (logged): the move goes on.
   */
  static async open(
    node: BridgeNode,
    meshPorts: MeshPorts | undefined,
    vmId: string,
    forwards: readonly HostPort[],
    logger: Logger,
  ): Promise<MovePortBridge> {
    const deferred = forwards.filter((forward) => forward.protocol === 'tcp');
    const listeners: MeshListener[] = [];
    for (const { host_port: port } of node.routingMesh ? deferred : []) {
      const route = meshPorts?.releasedFor(port, 'tcp', vmId);
      if (!route) continue;
      const listener = new MeshListener(port, {
        address: route.address,
        port,
        vm_id: vmId,
        node_id: route.nodeId,
      });
      try {
        await listener.listen(node.wgIp);
        listeners.push(listener);
      } catch (error) {
        logger.warn(
          `vm ${vmId}: ${node.wgIp}:${port}/tcp not forwarded to node ${route.nodeId} during its move (${(error as Error).message}); its QEMU takes it at the switchover`,
        );
      }
    }
    if (listeners.length > 0) {
      logger.log(
        `vm ${vmId}: ${listeners.map((one) => `${node.wgIp}:${one.port}/tcp`).join(', ')} still forwarded to node ${listeners[0].target.node_id} until the guest runs here`,
      );
    }
    return new MovePortBridge(node, vmId, deferred, listeners, logger);
  }

  /** Ports forwarded to the old node now. */
  get bridged(): number[] {
    return this.listeners.map((listener) => listener.port);
  }

  /**
   * The guest runs here: the forwarding ends and QEMU takes each deferred port. Never throws
   * (the guest is this node's by now): a port QEMU cannot take is logged, naming it. The
   * ports it could not take.
   */
  async handOver(qmp: QmpSession): Promise<number[]> {
    await this.close();
    const failed: number[] = [];
    for (const forward of this.deferred) {
      const rule = hostForwards(this.node.wgIp, [forward]).slice('hostfwd='.length);
      try {
        const said = await qmp.execute('human-monitor-command', {
          'command-line': `hostfwd_add ${NETDEV_ID} ${rule}`,
        });
        // HMP answers an error as text; success is silent.
        if (typeof said === 'string' && said.trim() !== '') throw new Error(said.trim());
      } catch (error) {
        failed.push(forward.host_port);
        this.logger.error(
          `vm ${this.vmId}: moved in, but its QEMU could not take ${this.node.wgIp}:${forward.host_port}/tcp (guest port ${forward.guest_port}): ${(error as Error).message}; it answers there once the VM restarts`,
        );
      }
    }
    return failed;
  }

  /** The forwarding ended (its connections with it); nothing given to QEMU. */
  async close(): Promise<void> {
    await Promise.all(this.listeners.splice(0).map((listener) => listener.close()));
  }
}
