import request from 'supertest';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord, NODE_RECORD_FIELDS } from '../support/heartbeats';

describe('fleet controller: input that is accepted', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet();
  });

  afterEach(async () => {
    await fleet.close();
  });

  it('accepts nanosecond timestamps and offsets as the original agent sends them', async () => {
    const sent = heartbeat({ node_id: 'n2', timestamp_utc: '2026-08-06T12:00:00.123456789+02:00' });
    await request(fleet.url).post('/v1/nodes/heartbeat').send(sent).expect(200);
    await request(fleet.url).get('/v1/nodes/n2').expect(200);
  });

  it('ignores unknown extra fields, so newer agents still enroll', async () => {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send({ ...heartbeat({ node_id: 'n1' }), gpu_count: 2, labels: { zone: 'a' } })
      .expect(200);
    const { body } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(Object.keys(body).sort()).toEqual(NODE_RECORD_FIELDS);
  });

  it('takes reserved as optional, false when absent or null', async () => {
    const { reserved: _omitted, ...withoutReserved } = heartbeat({ node_id: 'n3' });
    await request(fleet.url).post('/v1/nodes/heartbeat').send(withoutReserved).expect(200);
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send({ ...heartbeat({ node_id: 'n4' }), reserved: null })
      .expect(200);
    const { body } = await request(fleet.url).get('/v1/nodes').expect(200);
    expect(body.map((node: { reserved: boolean }) => node.reserved)).toEqual([false, false]);
  });
});

describe('fleet controller: bad input', () => {
  let fleet: RunningFleet;
  let before: unknown;

  beforeAll(async () => {
    fleet = await startFleet();
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', vms: [vmRecord('vm-1', { tenant_id: 'acme' })] }))
      .expect(200);
    before = (await request(fleet.url).get('/v1/fleet')).body;
  });

  afterAll(async () => {
    await fleet.close();
  });

  afterEach(async () => {
    // Whatever was refused, the fleet is as it was.
    expect((await request(fleet.url).get('/v1/fleet')).body).toEqual(before);
  });

  const good = heartbeat({ node_id: 'n1', ram_used_mb: 1 });

  it.each<[string, Record<string, unknown>]>([
    ['node_id', { node_id: '' }],
    ['node_id', { node_id: '-leading-dash' }],
    ['node_id', { node_id: 'a'.repeat(129) }],
    ['node_id', { node_id: 'has space' }],
    ['node_id', { node_id: undefined }],
    ['wg_ip', { wg_ip: 42 }],
    ['hostname', { hostname: undefined }],
    ['ram_total_mb', { ram_total_mb: '16384' }],
    ['ram_total_mb', { ram_total_mb: 1.5 }],
    ['ram_used_mb', { ram_used_mb: -1 }],
    ['cpu_cores', { cpu_cores: null }],
    ['cpu_load_pct', { cpu_load_pct: 100.5 }],
    ['cpu_load_pct', { cpu_load_pct: -0.1 }],
    ['kvm_available', { kvm_available: 'yes' }],
    ['reserved', { reserved: 'false' }],
    ['vms', { vms: undefined }],
    ['vms', { vms: {} }],
    ['vms.0.state', { vms: [vmRecord('vm-1', { state: 'Exploded' as never })] }],
    ['vms.0.vm_id', { vms: [vmRecord('../etc')] }],
    [
      'vms.1.host_ports.0.host_port',
      {
        vms: [
          vmRecord('a'),
          vmRecord('b', { host_ports: [{ host_port: 0, guest_port: 22, protocol: 'tcp' }] }),
        ],
      },
    ],
    ['boot_id', { boot_id: undefined }],
    ['timestamp_utc', { timestamp_utc: '2026-08-06 noon' }],
    ['timestamp_utc', { timestamp_utc: '2026-08-06T12:00:00' }],
    ['spawn_port', { spawn_port: 70000 }],
  ])('refuses a heartbeat with a bad %s (400 naming it)', async (field, change) => {
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send({ ...good, ...change })
      .expect(400);
    expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(body.message).toContain(field);
  });

  it('answers malformed JSON with 400 JSON', async () => {
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('content-type', 'application/json')
      .send('{"node_id": "n1",')
      .expect(400);
    expect(body).toMatchObject({ statusCode: 400, message: expect.stringContaining('JSON') });
  });

  it('answers a body over 1 MiB with 413 JSON', async () => {
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('content-type', 'application/json')
      .send(JSON.stringify({ ...good, hostname: 'x'.repeat(1024 * 1024) }))
      .expect(413);
    expect(body).toMatchObject({ statusCode: 413, message: expect.stringContaining('1 MiB') });
  });

  it.each<[string, Record<string, unknown>]>([
    ['vm_type', { vm_type: '../x' }],
    ['vm_type', { vm_type: 'a'.repeat(64) }],
    ['vm_type', { vm_type: 'under_score' }],
    ['ram_mb', { ram_mb: 0 }],
    ['ram_mb', { ram_mb: -512 }],
    ['ram_mb', { ram_mb: '512' }],
    ['vcpu_count', { vcpu_count: 0 }],
    ['vcpu_count', { vcpu_count: 1.5 }],
    ['prefer_kvm', { prefer_kvm: 'yes' }],
    ['preferred_node', { preferred_node: '../n1' }],
    ['tenant_id', { tenant_id: 'a b' }],
  ])('refuses a create with a bad %s (400 naming it)', async (field, change) => {
    const { body } = await request(fleet.url)
      .post('/v1/vms')
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, ...change })
      .expect(400);
    expect(body.message).toContain(field);
  });

  it('refuses bad ids in paths and queries (400 naming them)', async () => {
    expect((await request(fleet.url).get('/v1/nodes/..').expect(400)).body.message).toContain(
      'node_id',
    );
    expect(
      (
        await request(fleet.url)
          .get(`/v1/nodes/${'a'.repeat(129)}`)
          .expect(400)
      ).body.message,
    ).toContain('node_id');
    expect((await request(fleet.url).delete('/v1/vms/-x').expect(400)).body.message).toContain(
      'vm_id',
    );
    expect(
      (await request(fleet.url).get('/v1/vms?tenant_id=a%20b').expect(400)).body.message,
    ).toContain('tenant_id');
  });
});
