import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { VM_HOST_APP_OPTIONS, configureVmHostApp } from '../../apps/vm-host/src/bootstrap';
import { loadVmHostConfig } from '../../apps/vm-host/src/config/vm-host.config';
import { VmHostAppModule } from '../../apps/vm-host/src/vm-host-app.module';
import { VmsService } from '../../apps/vm-host/src/vms/vms.service';
import { OpenApiContract, checkResponsesAgainst, closeAndJudge } from './openapi-contract';
import { scratchFolder } from './scratch-folders';

const VM_HOST_CONTRACT = OpenApiContract.committed('vm-host.openapi.json');

export interface RunningVmHost {
  app: NestExpressApplication;
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The real agent app, set up by the same bootstrap as production, listening on a free loopback
 * port with its disk folder in a temporary directory. It does not heartbeat on its own. Every
 * response it sends is checked against the committed OpenAPI document: close() fails with any
 * that break it.
 */
export async function startVmHostApp(env: NodeJS.ProcessEnv = {}): Promise<RunningVmHost> {
  const diskDir = scratchFolder('vm-host-app-');
  const config = loadVmHostConfig({
    VM_FLEET_ENDPOINT: 'http://127.0.0.1:9',
    VM_NODE_ID: 'in-process-node',
    VM_WG_IP: '127.0.0.1',
    VM_DISK_DIR: diskDir,
    ...env,
  });
  const moduleRef = await Test.createTestingModule({
    imports: [VmHostAppModule.forConfig(config)],
  }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({
    ...VM_HOST_APP_OPTIONS,
    logger: false,
  });
  const checked = checkResponsesAgainst(app, VM_HOST_CONTRACT);
  configureVmHostApp(app);
  await app.get(VmsService).prepare();
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      closeAndJudge(async () => {
        await app.close();
        rmSync(diskDir, { recursive: true, force: true });
      }, checked),
  };
}
