import { NestFactory } from '@nestjs/core';
import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { OpenAPIObject } from '@nestjs/swagger';
import {
  DaemonLogger,
  addTokenSchemes,
  configureDaemonHttp,
  createDaemonDocument,
  daemonDocumentBuilder,
  serveSwaggerUi,
} from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';
import { FleetConfig } from './config/fleet.config';
import { FleetAppModule } from './fleet-app.module';

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
