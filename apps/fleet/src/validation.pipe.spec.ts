// @app/daemon's validation pipe on the fleet's own wire classes: the daemon lib knows none.
import { BadRequestException } from '@nestjs/common';
import { MAX_VMS_PER_HEARTBEAT, NodeHeartbeat, TenantQuery, VmRecord } from '@app/fleet-domain';
import { BoundedValidationPipe, summarizeProblems, validateInput } from '@app/daemon';
import { heartbeat as agentHeartbeat, vmRecord } from '../../../test/support/heartbeats';

const pipe = new BoundedValidationPipe();

function vm(index: number): VmRecord {
  return vmRecord(`vm-${index}`, {
    host_ports: [{ host_port: 40000, guest_port: 22, protocol: 'tcp' }],
  });
}

/**
 * A valid heartbeat body with one VM, without `reserved` (its default is under test), and
 * `extra` fields of any kind, good or bad.
 */
function heartbeat(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { reserved: _omitted, ...body } = agentHeartbeat({ node_id: 'n1', vms: [vm(1)] });
  return { ...body, ...extra };
}

/** The 400 message the pipe answers with, or undefined when it accepts the body. */
async function refusal(body: unknown): Promise<string | undefined> {
  try {
    await pipe.transform(body, { type: 'body', metatype: NodeHeartbeat });
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestException);
    return (error as BadRequestException).message;
  }
}

/** Nested `depth` times inside itself, built without recursion. */
function nestedArrays(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = [value];
  return value;
}

describe('BoundedValidationPipe', () => {
  it('gives the service a NodeHeartbeat with VmRecords, defaults applied', async () => {
    const accepted = await pipe.transform(heartbeat(), { type: 'body', metatype: NodeHeartbeat });
    expect(accepted).toBeInstanceOf(NodeHeartbeat);
    expect((accepted as NodeHeartbeat).reserved).toBe(false);
    expect((accepted as NodeHeartbeat).vms[0]).toBeInstanceOf(VmRecord);
    expect((accepted as NodeHeartbeat).vms[0].host_ports).toHaveLength(1);
  });

  it('takes a heartbeat with or without disk_room, and refuses one out of bounds naming the field', async () => {
    const diskRoom = {
      room_mb: 40_960,
      committed_mb: 28_672,
      committable_mb: 12_288,
      reserve_mb: 2_048,
      overcommit: 1.5,
    };
    expect(await refusal(heartbeat())).toBeUndefined();
    expect(await refusal({ ...heartbeat(), disk_room: diskRoom })).toBeUndefined();
    expect(
      await refusal({ ...heartbeat(), disk_room: { ...diskRoom, room_mb: 2 ** 40 + 1 } }),
    ).toBe('disk_room.room_mb must not be greater than 1099511627776');
    expect(await refusal({ ...heartbeat(), disk_room: { ...diskRoom, committed_mb: 1.5 } })).toBe(
      'disk_room.committed_mb must be an integer number',
    );
    expect(await refusal({ ...heartbeat(), disk_room: { ...diskRoom, overcommit: 0.5 } })).toBe(
      'disk_room.overcommit must not be less than 1',
    );
    expect(await refusal({ ...heartbeat(), disk_room: [] })).toContain('disk_room');
    const { reserve_mb: _reserve, ...partial } = diskRoom;
    expect(await refusal({ ...heartbeat(), disk_room: partial })).toContain('disk_room.reserve_mb');
  });

  it('refuses 100,000 VMs by their count alone, naming vms', async () => {
    const vms = Array.from({ length: 100_000 }, () => ({}));
    expect(await refusal(heartbeat({ vms }))).toBe(
      `vms must contain no more than ${MAX_VMS_PER_HEARTBEAT} elements`,
    );
  });

  it('lists five problems of 1,024 bad VMs and counts the rest, in a few hundred bytes', async () => {
    const vms = Array.from({ length: MAX_VMS_PER_HEARTBEAT }, () => ({}));
    const message = (await refusal(heartbeat({ vms })))!;
    expect(message.split('; ')).toHaveLength(6);
    expect(message).toMatch(/^vms\.0\.vm_id must be .*; and \d+ more$/);
    expect(message.length).toBeLessThan(2_000);
  });

  it('drops unknown fields unread, however deep, and keeps none of them', async () => {
    const accepted = await pipe.transform(
      heartbeat({
        labels: nestedArrays(100_000),
        vms: [{ ...vm(1), extra: nestedArrays(100_000) }],
      }),
      { type: 'body', metatype: NodeHeartbeat },
    );
    expect(accepted).not.toHaveProperty('labels');
    expect((accepted as NodeHeartbeat).vms[0]).not.toHaveProperty('extra');
  });

  it('refuses deep nesting where a string or a VM belongs by its kind, naming the field', async () => {
    expect(await refusal(heartbeat({ hostname: nestedArrays(100_000) }))).toContain('hostname');
    expect(await refusal(heartbeat({ ram_total_mb: { a: nestedArrays(100_000) } }))).toContain(
      'ram_total_mb',
    );
    expect(await refusal(heartbeat({ vms: nestedArrays(100_000) }))).toBe(
      'vms.0 must be an object',
    );
    expect(await refusal(heartbeat({ vms: [vm(1), 'vm-2'] }))).toBe('vms.1 must be an object');
  });

  it('refuses a body that is not an object', async () => {
    expect(await refusal([heartbeat()])).toBe('the request body must be a JSON object');
  });

  it('gives other work a turn while it validates a long list of VMs', async () => {
    const vms = Array.from({ length: MAX_VMS_PER_HEARTBEAT }, (_, index) => vm(index));
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const accepted = await pipe.transform(heartbeat({ vms }), {
      type: 'body',
      metatype: NodeHeartbeat,
    });
    clearInterval(ticker);
    expect((accepted as NodeHeartbeat).vms).toHaveLength(MAX_VMS_PER_HEARTBEAT);
    expect(turns).toBeGreaterThan(0);
  });

  it.each([
    [{ 'tenant_id[]': 'acme' }],
    [{ 'tenant_id[a]': 'b' }],
    [{ tenant_id: ['acme', 'other'] }],
    [{ tenant_id: { a: 'b' } }],
  ])('refuses tenant_id given as an array or object (%j), naming it', async (query) => {
    await expect(pipe.transform(query, { type: 'query', metatype: TenantQuery })).rejects.toThrow(
      /tenant_id must be/,
    );
  });

  it('lets a plain tenant_id through, and no query at all', async () => {
    expect(
      await pipe.transform({ tenant_id: 'acme' }, { type: 'query', metatype: TenantQuery }),
    ).toEqual({ tenant_id: 'acme' });
    expect(await pipe.transform({}, { type: 'query', metatype: TenantQuery })).toEqual({});
  });

  it('passes values of native types and custom decorators through untouched', async () => {
    expect(await pipe.transform('x', { type: 'param', metatype: String })).toBe('x');
    expect(await pipe.transform({ a: 1 }, { type: 'custom', metatype: NodeHeartbeat })).toEqual({
      a: 1,
    });
  });
});

describe('validateInput', () => {
  it('reports every problem of an agent reply, each naming its field', async () => {
    const { instance, problems } = await validateInput(
      VmRecord,
      { ...vm(1), vm_id: '../x', host_ports: 'none' },
      'body',
    );
    expect(instance).toBeUndefined();
    expect(problems).toEqual([
      expect.stringMatching(/^vm_id must be/),
      expect.stringMatching(/^host_ports must be an array/),
    ]);
  });
});

describe('summarizeProblems', () => {
  it('shortens each problem and strips control characters', () => {
    const summary = summarizeProblems([`a\nb${'x'.repeat(1_000)}`]);
    expect(summary).not.toContain('\n');
    expect(summary.length).toBeLessThanOrEqual(300);
  });
});
