import type { ServerResponse } from 'node:http';
import request from 'supertest';
import type { HeartbeatAnswer, VmRecord } from '@app/fleet-domain';
import { RunningFleet, startFleet } from './fleet-app';
import { heartbeat } from './heartbeats';
import { StubAgent, StubAgentCall } from './stub-agent';

/** The in-process controller with its operations listener, and the stub agents a spec starts. */
export interface OpsFleetWithStubs {
  /** The controller of the running test (started before each, closed after each). */
  fleet: () => RunningFleet;
  /** A stub agent answering with `respond`, stopped after the test. */
  agent: (respond: (call: StubAgentCall, res: ServerResponse) => void) => Promise<StubAgent>;
  /** A heartbeat of `nodeId` at the stub's port listing `vms`: the controller's answer (200). */
  beat: (nodeId: string, stub: StubAgent, vms?: VmRecord[]) => Promise<HeartbeatAnswer>;
}

/**
 * Registers, in the calling describe block, a controller started before each test (operations
 * listener on) and closed after it with every stub agent the test started.
 */
export function opsFleetWithStubs(): OpsFleetWithStubs {
  let fleet: RunningFleet | undefined;
  const agents: StubAgent[] = [];
  beforeEach(async () => {
    fleet = await startFleet({ ops: true });
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    await fleet?.close();
  });
  const running = (): RunningFleet => {
    if (!fleet) throw new Error('no controller: call inside a test');
    return fleet;
  };
  return {
    fleet: running,
    agent: async (respond) => {
      const stub = await new StubAgent(respond).start();
      agents.push(stub);
      return stub;
    },
    beat: async (nodeId, stub, vms = []) => {
      const { body } = await request(running().url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: nodeId, spawn_port: stub.port, vms }))
        .expect(200);
      return body as HeartbeatAnswer;
    },
  };
}
