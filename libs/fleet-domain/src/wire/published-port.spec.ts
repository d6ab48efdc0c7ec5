import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { CreateVmRequest } from './create-vm-request';
import { PublishedPortRequest, checkPublishedPorts } from './published-port';
import { canonicalCreateRequest } from '../idempotency';

/** What the validation pipe says of each field, then what the services' check says. */
function problems(ports: unknown): string[] {
  const found = fieldProblems(ports);
  if (found.length > 0 || !Array.isArray(ports)) return found;
  try {
    checkPublishedPorts(ports as PublishedPortRequest[]);
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

function fieldProblems(ports: unknown): string[] {
  const request = plainToInstance(CreateVmRequest, {
    vm_type: 'web',
    ram_mb: 64,
    vcpu_count: 1,
    ports,
  });
  return validateSync(request).flatMap(function messages(error): string[] {
    return [...Object.values(error.constraints ?? {}), ...(error.children ?? []).flatMap(messages)];
  });
}

describe('CreateVmRequest.ports', () => {
  it('takes none, or up to 16 tcp/udp ports with an optional host_port from 1024', () => {
    expect(problems(undefined)).toEqual([]);
    expect(
      problems([
        { guest_port: 80, protocol: 'tcp' },
        { guest_port: 53, protocol: 'udp', host_port: 5353 },
      ]),
    ).toEqual([]);
    expect(
      problems(Array.from({ length: 17 }, (_, i) => ({ guest_port: 1000 + i, protocol: 'tcp' }))),
    ).toEqual(['ports must contain no more than 16 elements']);
    expect(problems([{ guest_port: 80, protocol: 'sctp' }])).toEqual([
      'protocol must be one of the following values: tcp, udp',
    ]);
    expect(problems([{ guest_port: 80, protocol: 'tcp', host_port: 80 }])).toEqual([
      'host_port must not be less than 1024',
    ]);
    expect(problems([{ guest_port: 0, protocol: 'tcp' }])).toEqual([
      'guest_port must not be less than 1',
    ]);
  });

  it('refuses the same guest or host port twice per protocol, and SSH, naming the entry', () => {
    expect(
      problems([
        { guest_port: 80, protocol: 'tcp' },
        { guest_port: 80, protocol: 'tcp', host_port: 8080 },
      ]),
    ).toEqual(['ports[1].guest_port: 80/tcp is already asked for by ports[0]']);
    expect(
      problems([
        { guest_port: 80, protocol: 'tcp', host_port: 8080 },
        { guest_port: 81, protocol: 'tcp', host_port: 8080 },
      ]),
    ).toEqual(['ports[1].host_port: 8080/tcp is already asked for by ports[0]']);
    expect(
      problems([
        { guest_port: 53, protocol: 'tcp', host_port: 5353 },
        { guest_port: 53, protocol: 'udp', host_port: 5353 },
      ]),
    ).toEqual([]);
    expect(problems([{ guest_port: 22, protocol: 'tcp' }])).toEqual([
      "ports[0].guest_port: 22/tcp is the VM's SSH forward, always published first; leave it out",
    ]);
  });

  it('hashes a create without ports as before, and one with ports apart from it', () => {
    const base = { vm_type: 'web', ram_mb: 64, vcpu_count: 1, prefer_kvm: false };
    expect(canonicalCreateRequest({ ...base, ports: [] })).toBe(
      '{"vm_type":"web","ram_mb":64,"vcpu_count":1,"prefer_kvm":false,"preferred_node":null,"tenant_id":null}',
    );
    expect(
      canonicalCreateRequest({ ...base, ports: [{ guest_port: 80, protocol: 'tcp' }] }),
    ).toContain('"ports":[{"guest_port":80,"protocol":"tcp","host_port":null}]');
  });
});
