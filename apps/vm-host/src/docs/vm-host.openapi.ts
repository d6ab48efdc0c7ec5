import type { NestExpressApplication } from '@nestjs/platform-express';
import type { OpenAPIObject } from '@nestjs/swagger';
import { addTokenSchemes, createDaemonDocument, daemonDocumentBuilder } from '@app/daemon';
import { DEFAULT_SPAWN_PORT, EXAMPLE_WG_IP } from '@app/fleet-domain';

/**
 * The agent's OpenAPI document, built from the code by the generator (openapi/documents.ts).
 * Never imported at run time: the agent serves the committed file (committed-docs.ts).
 */
export function buildVmHostOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const builder = daemonDocumentBuilder({
    title: 'service-vm-host',
    description:
      "PPN node agent's local API, on VM_WG_IP:VM_SPAWN_PORT (default 9204): the fleet controller asks it to start and destroy VMs. With VM_FLEET_NODE_TOKEN set on the agent, every operation needs it as a bearer token (the controller sends it); unset, they are open.",
    server: {
      url: 'http://{wg_ip}:{spawn_port}',
      description: "A node's agent, on its WireGuard address.",
      variables: {
        wg_ip: {
          default: EXAMPLE_WG_IP,
          description: "The node's VM_WG_IP (an IPv6 address goes in brackets).",
        },
        spawn_port: {
          default: String(DEFAULT_SPAWN_PORT),
          description: "The node's VM_SPAWN_PORT.",
        },
      },
    },
    tags: {
      vms: "This node's VMs: spawn, list, destroy.",
      'vm-actions':
        "An operator's actions on this node's VMs, through the controller's operations listener: stop, start, restart, the serial console, each VM's life cycle.",
      'vm-backups':
        "A VM's backups to this node's VM_BACKUP_DIR, through the controller's operations listener: take one now, list them.",
      'vm-restores':
        "Restores on this node, through the controller's operations listener: the points it holds for a VM (a peer's copy, its VM_BACKUP_DIR's backups), and a VM made from one.",
      'vm-copies':
        "Where a VM's copies on other nodes go, as the controller's copy planner says (peers, interval, grants).",
      moves:
        "A VM leaving this node for another, through the controller's operations listener: moved live or cold, then its old disk released.",
    },
  });
  return createDaemonDocument(
    app,
    addTokenSchemes(builder, ['node'], {
      node: "This node's token, the value of VM_FLEET_NODE_TOKEN on the agent, which the controller sends on every call. In a fleet with per-node tokens (VM_FLEET_NODE_SECRET on the controller), it is this node's own, derived from its node id (what `ppn-fleet node-token <node_id>` prints): another node's token, the fleet secret or the operators' API token is refused, so one node's token opens no other node's agent. Required only when VM_FLEET_NODE_TOKEN is set on the agent; unset, the operations are open.",
    }),
  );
}
