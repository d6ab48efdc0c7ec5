import request from 'supertest';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';

describe('fleet controller: nodes', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet();
  });

  afterEach(async () => {
    await fleet.close();
  });

  const beat = (body: object) =>
    request(fleet.url).post('/v1/nodes/heartbeat').send(body).expect(200);

  it('enrolls a node by its first heartbeat, with exactly the eight record fields', async () => {
    await request(fleet.url).get('/v1/nodes').expect(200, []);
    await beat(
      heartbeat({
        node_id: 'compute-west-01',
        wg_ip: '10.8.0.21',
        hostname: 'west-01',
        ram_total_mb: 32768,
        ram_used_mb: 8192,
        kvm_available: true,
        vms: [vmRecord('vm-a'), vmRecord('vm-b')],
      }),
    );
    const expected = {
      node_id: 'compute-west-01',
      hostname: 'west-01',
      wg_ip: '10.8.0.21',
      ram_available_mb: 24576,
      vm_count: 2,
      kvm_available: true,
      reserved: false,
      last_heartbeat: new Date(fleet.clock.now()).toISOString(),
    };
    await request(fleet.url).get('/v1/nodes').expect(200, [expected]);
    await request(fleet.url).get('/v1/nodes/compute-west-01').expect(200, expected);
    const { body } = await request(fleet.url).get('/v1/fleet').expect(200);
    expect(body).toEqual({
      nodes: [expected],
      last_updated: new Date(fleet.clock.now()).toISOString(),
    });
  });

  it('answers 404 JSON naming an unknown node', async () => {
    const { body } = await request(fleet.url).get('/v1/nodes/nobody').expect(404);
    expect(body).toMatchObject({ statusCode: 404, message: expect.stringContaining('nobody') });
  });

  it('replaces the record wholesale: nothing of the previous heartbeat survives', async () => {
    await beat(
      heartbeat({
        node_id: 'n1',
        ram_used_mb: 1024,
        kvm_available: true,
        reserved: true,
        vms: [vmRecord('vm-a', { tenant_id: 'acme' }), vmRecord('vm-b'), vmRecord('vm-c')],
      }),
    );
    await beat(
      heartbeat({
        node_id: 'n1',
        ram_used_mb: 15000,
        kvm_available: false,
        vms: [vmRecord('vm-z')],
      }),
    );
    const { body } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(body).toMatchObject({
      ram_available_mb: 1384,
      vm_count: 1,
      kvm_available: false,
      reserved: false,
    });
    const vms = await request(fleet.url).get('/v1/vms').expect(200);
    expect(vms.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual(['vm-z']);
    await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200, []);
  });

  it('lets a heartbeat with an id already in use overwrite the record', async () => {
    await beat(
      heartbeat({ node_id: 'shared', wg_ip: '10.8.0.1', hostname: 'first', boot_id: 'boot-a' }),
    );
    await beat(
      heartbeat({ node_id: 'shared', wg_ip: '10.8.0.2', hostname: 'second', boot_id: 'boot-b' }),
    );
    const { body } = await request(fleet.url).get('/v1/nodes').expect(200);
    expect(body).toHaveLength(1);
    expect(body[0]).toMatchObject({ node_id: 'shared', wg_ip: '10.8.0.2', hostname: 'second' });
  });

  it('ignores a delayed heartbeat older than the stored one of the same boot (200, no rollback), and says so', async () => {
    fleet.clock.advance(10_000); // the stamps below are then not ahead of the controller's clock
    const taken = await beat(
      heartbeat({
        node_id: 'n1',
        ram_used_mb: 2000,
        timestamp_utc: '2026-08-06T12:00:10.000000002Z',
      }),
    );
    expect(taken.body).toEqual({ accepted: true });
    fleet.clock.advance(1_000);
    const ignored = await beat(
      heartbeat({
        node_id: 'n1',
        ram_used_mb: 9000,
        timestamp_utc: '2026-08-06T12:00:10.000000001Z',
      }),
    );
    expect(ignored.body).toEqual({
      accepted: false,
      stored_timestamp_utc: '2026-08-06T12:00:10.000000002Z',
    });
    const { body } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(body.ram_available_mb).toBe(16384 - 2000);
  });

  it("keeps a node whose agent's clock went back 10 min listed and current", async () => {
    fleet.clock.advance(10_000);
    await beat(heartbeat({ node_id: 'n1', timestamp_utc: '2026-08-06T12:00:10Z' }));
    for (let second = 10; second <= 60; second += 10) {
      fleet.clock.advance(10_000);
      const stamp = `2026-08-06T11:50:${second === 60 ? '59' : second}Z`;
      const { body } = await beat(
        heartbeat({ node_id: 'n1', ram_used_mb: second, timestamp_utc: stamp }),
      );
      expect(body).toEqual({ accepted: true });
    }
    const { body } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(body.ram_available_mb).toBe(16384 - 60);
  });

  it('takes liveness from its own receive time, not the node clock', async () => {
    await beat(heartbeat({ node_id: 'past', timestamp_utc: '1999-01-01T00:00:00Z' }));
    await beat(heartbeat({ node_id: 'future', timestamp_utc: '2099-01-01T00:00:00Z' }));
    const { body } = await request(fleet.url).get('/v1/nodes').expect(200);
    expect(body.map((node: { node_id: string }) => node.node_id)).toEqual(['future', 'past']);
    for (const node of body)
      expect(node.last_heartbeat).toBe(new Date(fleet.clock.now()).toISOString());
    fleet.clock.advance(NODE_STALE_AFTER_MS + 100);
    await request(fleet.url).get('/v1/nodes').expect(200, []);
  });

  it('lists a node silent for 29.9 s and drops it at 30.1 s from every node read, its VMs marked silent', async () => {
    await beat(heartbeat({ node_id: 'quiet', vms: [vmRecord('vm-q', { tenant_id: 'acme' })] }));
    await beat(heartbeat({ node_id: 'chatty' }));

    fleet.clock.advance(29_900);
    await beat(heartbeat({ node_id: 'chatty' }));
    const listed = await request(fleet.url).get('/v1/nodes').expect(200);
    expect(listed.body.map((node: { node_id: string }) => node.node_id)).toEqual([
      'chatty',
      'quiet',
    ]);
    await request(fleet.url).get('/v1/nodes/quiet').expect(200);
    const fleetBefore = await request(fleet.url).get('/v1/fleet').expect(200);
    expect(fleetBefore.body.nodes).toHaveLength(2);
    const vmsBefore = await request(fleet.url).get('/v1/vms').expect(200);
    expect(vmsBefore.body).toHaveLength(1);

    fleet.clock.advance(200);
    const after = await request(fleet.url).get('/v1/nodes').expect(200);
    expect(after.body.map((node: { node_id: string }) => node.node_id)).toEqual(['chatty']);
    await request(fleet.url).get('/v1/nodes/quiet').expect(404);
    const fleetAfter = await request(fleet.url).get('/v1/fleet').expect(200);
    expect(fleetAfter.body.nodes.map((node: { node_id: string }) => node.node_id)).toEqual([
      'chatty',
    ]);
    // Its VMs may still run (an agent stopped leaves them): listed as it last reported them.
    const vmsAfter = await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200);
    expect(vmsAfter.body).toEqual([
      { ...vmsBefore.body[0], node_silent_since: expect.any(String) as string },
    ]);
    expect(vmsBefore.body[0]).not.toHaveProperty('node_silent_since');
  });

  it('re-enrolls a dropped node at its next heartbeat', async () => {
    await beat(heartbeat({ node_id: 'back' }));
    fleet.clock.advance(45_000);
    await request(fleet.url).get('/v1/nodes/back').expect(404);
    await beat(heartbeat({ node_id: 'back' }));
    await request(fleet.url).get('/v1/nodes/back').expect(200);
  });

  it('filters VMs by tenant across nodes, each VM with the node it runs on', async () => {
    await beat(
      heartbeat({
        node_id: 'n1',
        vms: [vmRecord('vm-1', { tenant_id: 'acme' }), vmRecord('vm-2', { tenant_id: 'globex' })],
      }),
    );
    await beat(
      heartbeat({
        node_id: 'n2',
        vms: [vmRecord('vm-3', { tenant_id: 'acme' }), vmRecord('vm-4')],
      }),
    );
    const all = await request(fleet.url).get('/v1/vms').expect(200);
    expect(all.body).toHaveLength(4);
    const acme = await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200);
    const byId = (a: { vm_id: string }, b: { vm_id: string }) => a.vm_id.localeCompare(b.vm_id);
    expect(acme.body.sort(byId)).toEqual([
      { ...vmRecord('vm-1', { tenant_id: 'acme' }), node_id: 'n1' },
      { ...vmRecord('vm-3', { tenant_id: 'acme' }), node_id: 'n2' },
    ]);
    expect(
      all.body.map(({ vm_id, node_id }: { vm_id: string; node_id: string }) => [vm_id, node_id]),
    ).toEqual(
      expect.arrayContaining([
        ['vm-2', 'n1'],
        ['vm-4', 'n2'],
      ]),
    );
    await request(fleet.url).get('/v1/vms?tenant_id=initech').expect(200, []);
  });

  it.each([
    '/healthz',
    '/health',
    '/v1/placement',
    '/v1/vms/x',
    '/v1/register',
    '/v1/nodes/n1/unenroll',
  ])('has no %s route (404 JSON)', async (path) => {
    const { body } = await request(fleet.url).get(path).expect(404);
    expect(body.statusCode).toBe(404);
  });

  it('serves Swagger UI at /docs', async () => {
    const { text } = await request(fleet.url).get('/docs').redirects(1).expect(200);
    expect(text).toContain('swagger');
  });
});
