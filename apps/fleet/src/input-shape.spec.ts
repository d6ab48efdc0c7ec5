// @app/daemon's reading of wire classes, on the fleet's own: the daemon lib knows none.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateVmRequest, MAX_VMS_PER_HEARTBEAT, NodeHeartbeat, VmRecord } from '@app/fleet-domain';
import { fieldsOf, isListOfObjects } from '@app/daemon';

describe('fieldsOf: a wire class read through public APIs alone', () => {
  const field = (wireClass: new () => object, name: string) =>
    fieldsOf(wireClass).find((shape) => shape.name === name);

  it("finds each list of objects' item class and bound from @Type and @ArrayMaxSize", () => {
    const vms = field(NodeHeartbeat, 'vms')!;
    expect(vms.nested?.name).toBe('HeartbeatVm');
    expect(vms).toMatchObject({
      isArray: true,
      maxItems: MAX_VMS_PER_HEARTBEAT,
      transformed: false,
    });
    expect(isListOfObjects(vms)).toBe(true);
    expect(field(CreateVmRequest, 'ports')?.nested?.name).toBe('PublishedPortRequest');
  });

  it('finds a nested object and leaves plain fields unnested', () => {
    expect(field(CreateVmRequest, 'copies')).toMatchObject({ isArray: false });
    expect(field(CreateVmRequest, 'copies')?.nested?.name).toBe('CopyPolicy');
    expect(field(CreateVmRequest, 'vm_type')?.nested).toBeUndefined();
  });

  it('sees a @Transform that defaults an absent value, so that list is shaped whole', () => {
    const hostPorts = field(VmRecord, 'host_ports')!;
    expect(hostPorts.transformed).toBe(true);
    expect(isListOfObjects(hostPorts)).toBe(false);
    expect(field(CreateVmRequest, 'prefer_kvm')?.transformed).toBe(true);
  });

  it('does not read class-transformer by a private path', () => {
    const source = readFileSync(join(__dirname, '../../../libs/daemon/src/input-shape.ts'), 'utf8');
    expect(source).not.toMatch(/class-transformer\/(cjs|esm|types)/);
  });
});
