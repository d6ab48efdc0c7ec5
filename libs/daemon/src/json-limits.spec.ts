import { JSON_LIMITS, findCostlyJson } from './json-limits';

const scan = (text: string) => findCostlyJson(Buffer.from(text));

function heartbeatWith(vms: number, portsPerVm: number): string {
  return JSON.stringify({
    node_id: 'n1',
    hostname: 'h',
    vms: Array.from({ length: vms }, (_, index) => ({
      vm_id: `vm-${index}`,
      state: 'Running',
      host_ports: Array.from({ length: portsPerVm }, (_, port) => ({
        host_port: 40000 + port,
        guest_port: 22,
        protocol: 'tcp',
      })),
    })),
  });
}

describe('findCostlyJson', () => {
  it('passes the largest heartbeat that fits in 1 MiB: 1,024 VMs with 16 host ports each', () => {
    const body = heartbeatWith(1024, 16);
    expect(body.length).toBeGreaterThan(900_000);
    expect(scan(body)).toBeUndefined();
  });

  it(`refuses nesting deeper than ${JSON_LIMITS.maxDepth}, naming the top-level field`, () => {
    const deep = (depth: number) =>
      `{"node_id":"n1","labels":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
    expect(scan(deep(JSON_LIMITS.maxDepth))).toBeUndefined();
    expect(scan(deep(JSON_LIMITS.maxDepth + 1))).toBe(
      `nests arrays and objects more than ${JSON_LIMITS.maxDepth} deep (under field "labels")`,
    );
    expect(scan(`{"hostname":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`)).toContain(
      'under field "hostname"',
    );
  });

  it(`refuses more than ${JSON_LIMITS.maxContainers} arrays and objects`, () => {
    const many = (count: number) =>
      `{"vms":[${Array(count - 2)
        .fill('{}')
        .join(',')}]}`;
    expect(scan(many(JSON_LIMITS.maxContainers))).toBeUndefined();
    expect(scan(many(JSON_LIMITS.maxContainers + 1))).toBe(
      `holds more than ${JSON_LIMITS.maxContainers} arrays and objects (under field "vms")`,
    );
  });

  it(`refuses more than ${JSON_LIMITS.maxValues} values, counting arrays and objects`, () => {
    const zeros = (count: number) => `{"labels":[${Array(count).fill('0').join(',')}]}`;
    // count - 1 commas and 2 containers.
    expect(scan(zeros(JSON_LIMITS.maxValues - 1))).toBeUndefined();
    expect(scan(zeros(JSON_LIMITS.maxValues))).toBe(
      `holds more than ${JSON_LIMITS.maxValues} values (under field "labels")`,
    );
  });

  it(`refuses more than ${JSON_LIMITS.maxDistinctNames} different field names, however often each is used`, () => {
    const names = (count: number) =>
      `{${Array.from({ length: count }, (_, index) => `"x${index}":0`).join(',')}}`;
    expect(scan(names(JSON_LIMITS.maxDistinctNames))).toBeUndefined();
    expect(scan(names(JSON_LIMITS.maxDistinctNames + 1))).toBe(
      `uses more than ${JSON_LIMITS.maxDistinctNames} different field names`,
    );
    // The same few names over and over are what a real heartbeat is made of.
    expect(scan(heartbeatWith(1024, 1))).toBeUndefined();
  });

  it('counts neither brackets nor names inside string values, escaped quotes included', () => {
    const brackets = '[{'.repeat(50_000);
    expect(scan(JSON.stringify({ hostname: brackets }))).toBeUndefined();
    expect(scan(JSON.stringify({ hostname: `a"${brackets}` }))).toBeUndefined();
    expect(scan(JSON.stringify({ hostname: `a\\`, labels: [[1]] }))).toBeUndefined();
    const values = Array.from({ length: 5_000 }, (_, index) => `v${index}`);
    expect(scan(JSON.stringify({ tags: values }))).toBeUndefined();
  });

  it('gives an answer for any bytes, JSON or not', () => {
    expect(scan('"unterminated [[[[')).toBeUndefined();
    expect(scan(']]]]}}}}{"a":1}')).toBeUndefined();
    expect(scan('\\\\\\"')).toBeUndefined();
    expect(scan('['.repeat(1_000))).toContain('more than 32 deep');
  });
});
