import { NestFactory } from '@nestjs/core';
import type { INestApplication, NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { OpenAPIObject } from '@nestjs/swagger';
import {
  ConfigurationError,
  DaemonLogger,
  ListenAddress,
  addTokenSchemes,
  configureDaemonHttp,
  createDaemonDocument,
  daemonDocumentBuilder,
  formatListenAddress,
  replyConstantsSerialized,
  serveSwaggerUi,
} from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';
import { AuditLog, auditRequests } from './audit/audit-log';
import { FleetConfig } from './config/fleet.config';
import { FleetAppModule } from './fleet-app.module';
import { guardOpsListener } from './operations/ops-listener.http';
import { FleetOpsAppModule, fleetOpsSharedFrom } from './fleet-ops-app.module';
import { FleetOpsAppHolder } from './fleet-ops-app.holder';
import { ACCEPTED } from './nodes/nodes.service';

/** Options every fleet app is created with: main, the e2e tests and the OpenAPI generator. */
export const FLEET_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

/** The node-token scheme as the controller judges it: shared, or each node's own. */
const FLEET_NODE_TOKEN_SCHEME =
  "The node token an agent heartbeats with. Without VM_FLEET_NODE_SECRET it is the one value of VM_FLEET_NODE_TOKEN, shared by every node. With VM_FLEET_NODE_SECRET set on the controller, each node has its own: node X's token is base64url(HMAC-SHA256(key = secret, message = \"ppn-node-token:v1:\" + X)), unpadded (what `ppn-fleet node-token X` prints), and a heartbeat is taken only with the token of the node_id in its body: any other (another node's, the secret itself) is answered 401, judged once the body is parsed and valid and before anything is stored. Beside the secret, the shared VM_FLEET_NODE_TOKEN is still taken from any node (a migration), and with VM_FLEET_NODE_SECRET_PREVIOUS, each node's token under the previous secret, for that node only (a rotation). The controller calls each agent with the token its node last heartbeated with (its own, or during either window the shared or its old one), never another. Required only when VM_FLEET_NODE_TOKEN or VM_FLEET_NODE_SECRET is set; unset, heartbeats are open.";

export function buildFleetOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const builder = daemonDocumentBuilder({
    title: 'service-vm-fleet',
    description:
      "PPN fleet controller: node registry (enrolled by heartbeat, dropped after 30 s of silence), VM listing and advisory placement. Listens on port 9203. Tokens are opt-in: with VM_FLEET_NODE_TOKEN set, heartbeats need it as a bearer token, and with VM_FLEET_NODE_SECRET set, each node's own token (see the node-token scheme); with VM_FLEET_API_TOKEN set, every other operation needs that one. Unset, the operations are open.",
    server: {
      url: `http://{controller}:${FLEET_PORT}`,
      description: `The fleet controller; its port is always ${FLEET_PORT}.`,
      variables: {
        controller: {
          default: '127.0.0.1',
          description:
            "The controller's host name or address, as in the agents' VM_FLEET_ENDPOINT.",
        },
      },
    },
    tags: {
      nodes: 'The node registry: heartbeats in, live nodes out. A node silent for 30 s is dropped.',
      vms: 'VMs on the live nodes: listing, placement with dispatch to a node, deletion.',
    },
  });
  return createDaemonDocument(
    app,
    addTokenSchemes(builder, ['node', 'api'], { node: FLEET_NODE_TOKEN_SCHEME }),
  );
}

/** Everything that makes a Nest app the fleet controller, apart from listening. */
export function configureFleetApp(app: NestExpressApplication): NestExpressApplication {
  auditRequests(app, app.get(AuditLog), 'api');
  replyConstantsSerialized(app, [ACCEPTED]);
  return configureDaemonHttp(app, serveSwaggerUi(buildFleetOpenApiDocument));
}

export async function createFleetApp(
  config: FleetConfig,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(FleetAppModule.forConfig(config), {
    ...FLEET_APP_OPTIONS,
    logger: new DaemonLogger(config.logFormat),
    ...options,
  });
  return configureFleetApp(app);
}

/** The operations listener's document: openapi/fleet-ops.openapi.json. */
export function buildFleetOpsOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const builder = daemonDocumentBuilder({
    title: 'service-vm-fleet operations',
    description:
      "PPN fleet controller, operations listener: the VMs with their life cycles, and an operator's stop, start, restart, serial console and backups, each sent to the agent of the VM's node with that node's own token. It listens on VM_FLEET_OPS_ADDR (default 127.0.0.1:9206: the controller's own host only), apart from the API on port 9203, whose routes it does not change. With VM_FLEET_API_TOKEN set, every operation needs that token; unset, they are open. It answers only to its own names (421 for any other Host header: its address, localhost on loopback, VM_FLEET_OPS_HOSTS), and every write (a stop, start, restart or backup) needs Content-Type: application/json (a body or not) or an Authorization header, and no other site's Sec-Fetch-Site or Origin (403), open or not. Every answer about an agent is in the controller's own words; nothing an agent answers is passed on but its validated life cycle or console text.",
    server: {
      url: 'http://{ops_address}',
      description: "The controller's operations listener.",
      variables: {
        ops_address: {
          default: '127.0.0.1:9206',
          description: "The controller's VM_FLEET_OPS_ADDR.",
        },
      },
    },
    tags: {
      vms: "VMs with their life cycles, and the actions sent to the agent of each VM's node.",
      nodes: "The nodes' disk room, as their heartbeats report it.",
    },
  });
  return createDaemonDocument(app, addTokenSchemes(builder, ['api']));
}

/**
 * Everything that makes a Nest app the operations listener, apart from listening: the daemons'
 * HTTP setup behind the listener's own checks (its Host names, no cross-site writes).
 */
export function configureFleetOpsApp(app: NestExpressApplication): NestExpressApplication {
  const config = app.get(FleetConfig);
  auditRequests(app, app.get(AuditLog), 'ops');
  guardOpsListener(app, config.opsHosts ?? [], config.apiToken !== undefined);
  return configureDaemonHttp(app, serveSwaggerUi(buildFleetOpsOpenApiDocument));
}

/**
 * The operations listener's app, not configured: a second Nest app in this process whose
 * services are the main app's own instances (see FleetOpsAppModule), closed when `fleet` is.
 * For main (through createFleetOpsApp), the e2e tests and, in preview, the OpenAPI generator.
 */
export async function buildFleetOpsApp(
  fleet: INestApplication,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  const ops = await NestFactory.create<NestExpressApplication>(
    FleetOpsAppModule.forShared(fleetOpsSharedFrom(fleet)),
    {
      ...FLEET_APP_OPTIONS,
      logger: new DaemonLogger(fleet.get(FleetConfig).logFormat),
      ...options,
    },
  );
  if (!options.preview) fleet.get(FleetOpsAppHolder).hold(ops);
  return ops;
}

export async function createFleetOpsApp(
  fleet: INestApplication,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  return configureFleetOpsApp(await buildFleetOpsApp(fleet, options));
}

/** Binds the operations listener; a bind failure names VM_FLEET_OPS_ADDR, as a bad value does. */
export async function listenForOperators(
  ops: NestExpressApplication,
  address: ListenAddress,
): Promise<void> {
  await ops.listen(address.port, address.host).catch((error: unknown) => {
    throw new ConfigurationError(
      `VM_FLEET_OPS_ADDR ${formatListenAddress(address)} cannot be bound: ${(error as Error).message}`,
    );
  });
}
