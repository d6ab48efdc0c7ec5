import request from 'supertest';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat } from '../support/heartbeats';

/**
 * POST /v1/nodes/{node_id}/declare-dead outside etcd mode (memory): refused 409 naming why,
 * nothing marked; and the heartbeat answer carries no fence_after_s there. Checked against
 * openapi/fleet-ops.openapi.json.
 */
describe('node declare-dead and leases in memory mode', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet({ ops: true });
  });

  afterEach(() => fleet.close());

  it('answers heartbeats without fence_after_s, and refuses declare-dead (409) naming etcd mode', async () => {
    const beat = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1' }))
      .expect(200);
    expect(beat.body).toEqual({ accepted: true });
    const refused = await request(fleet.opsUrl)
      .post('/v1/nodes/n1/declare-dead')
      .set('content-type', 'application/json')
      .expect(409);
    expect((refused.body as { message: string }).message).toBe(
      'node n1: declare-dead needs fleet state in etcd (VM_FLEET_ETCD_ENDPOINTS): without node leases nothing is fenced, so nothing is recovered; restore each VM with ppn-fleet vm restore',
    );
    await request(fleet.opsUrl)
      .post('/v1/nodes/bad%2Fid/declare-dead')
      .set('content-type', 'application/json')
      .expect(400);
  });
});
