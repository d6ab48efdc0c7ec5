import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { AddressInfo } from 'node:net';
import { Clock } from '@app/daemon';
import {
  FLEET_APP_OPTIONS,
  buildFleetOpsApp,
  configureFleetApp,
  configureFleetOpsApp,
} from '../../apps/fleet/src/bootstrap';
import { loadFleetConfig } from '../../apps/fleet/src/config/fleet-config.load';
import { FleetAppModule } from '../../apps/fleet/src/fleet-app.module';
import { VmHostClientSettings } from '../../apps/fleet/src/vms/agent-calls';
import { FakeClock } from './fake-clock';
import { OpenApiContract, checkResponsesAgainst, closeAndJudge } from './openapi-contract';

const FLEET_CONTRACT = OpenApiContract.committed('fleet.openapi.json');
const FLEET_OPS_CONTRACT = OpenApiContract.committed('fleet-ops.openapi.json');

export interface RunningFleet {
  app: NestExpressApplication;
  url: string;
  /** The operations listener's base URL, when started with `ops`. */
  opsUrl: string;
  clock: FakeClock;
  close(): Promise<void>;
}

/**
 * The real fleet app, set up by the same bootstrap as production, listening on a free
 * loopback port. Only the clock and the agent timeout are replaced. Every response it sends is
 * checked against the committed OpenAPI document: close() fails with any that break it.
 */
export async function startFleet(
  options: {
    agentTimeoutMs?: number;
    redisUrl?: string;
    clock?: FakeClock;
    /**
     * The store's own clock, not a FakeClock (`clock` is then not the app's): for a spec that
     * fakes the machine's clocks themselves.
     */
    storeClock?: boolean;
    /** More of the controller's environment, such as its tokens. */
    env?: NodeJS.ProcessEnv;
    /**
     * Also the operations listener, built as main.ts builds it, on a free loopback port (not
     * VM_FLEET_OPS_ADDR's), its responses checked against openapi/fleet-ops.openapi.json.
     */
    ops?: boolean;
  } = {},
): Promise<RunningFleet> {
  const clock = options.clock ?? new FakeClock();
  const config = loadFleetConfig({ ...options.env, VM_FLEET_REDIS_URL: options.redisUrl });
  const settings = new VmHostClientSettings();
  if (options.agentTimeoutMs !== undefined) settings.timeoutMs = options.agentTimeoutMs;
  let builder = Test.createTestingModule({ imports: [FleetAppModule.forConfig(config)] });
  if (!options.storeClock) builder = builder.overrideProvider(Clock).useValue(clock);
  const moduleRef = await builder
    .overrideProvider(VmHostClientSettings)
    .useValue(settings)
    .compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({
    ...FLEET_APP_OPTIONS,
    logger: false,
  });
  const checked = checkResponsesAgainst(app, FLEET_CONTRACT);
  configureFleetApp(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  let opsUrl = '';
  let opsChecked: { verdict(): string[] } = { verdict: () => [] };
  if (options.ops) {
    const ops = await buildFleetOpsApp(app, { logger: false });
    opsChecked = checkResponsesAgainst(ops, FLEET_OPS_CONTRACT);
    configureFleetOpsApp(ops);
    await ops.listen(0, '127.0.0.1');
    opsUrl = `http://127.0.0.1:${(ops.getHttpServer().address() as AddressInfo).port}`;
  }
  return {
    app,
    url: `http://127.0.0.1:${port}`,
    opsUrl,
    clock,
    // Closing the controller closes the operations listener first (FleetOpsAppHolder).
    close: () =>
      closeAndJudge(() => app.close(), {
        verdict: () => [...checked.verdict(), ...opsChecked.verdict()],
      }),
  };
}
