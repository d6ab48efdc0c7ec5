import { heartbeat, vmRecord } from '../support/heartbeats';

/**
 * Realistic heartbeat bodies (2 VMs each) for the load generator, cheap to stamp anew for each
 * request: a prefix and a suffix per node, with a fresh timestamp in between, so every
 * heartbeat is newer than the last one of its node and is stored, never ignored.
 */
export function nodeId(index: number): string {
  return `bench-node-${String(index).padStart(6, '0')}`;
}

export function heartbeatTemplate(index: number): { prefix: string; suffix: string } {
  const id = nodeId(index);
  const vm = (n: number) =>
    vmRecord(`vm-${String(index).padStart(6, '0')}-${n}`, {
      ram_alloc_mb: 2048,
      vcpu_count: 2,
      started_at: '2026-08-06T11:00:00.123456789Z',
      tenant_id: 'acme',
      host_ports: [{ host_port: 40000 + n, guest_port: 22, protocol: 'tcp' }],
    });
  const body = heartbeat({
    node_id: id,
    wg_ip: `10.8.${(index >> 8) & 255}.${index & 255}`,
    hostname: id,
    ram_total_mb: 65536,
    ram_used_mb: 16384 + (index % 1024),
    cpu_cores: 16,
    cpu_load_pct: 23.5,
    kvm_available: true,
    vms: [vm(1), vm(2)],
    boot_id: `4f0b6a8e-3c1d-4c53-9a53-${String(index).padStart(12, '0')}`,
    spawn_port: 9204,
    timestamp_utc: '@@',
  });
  const [prefix, suffix] = JSON.stringify(body).split('"@@"');
  return { prefix: prefix + '"', suffix: '"' + suffix };
}

/** Cycles through `nodes` node ids, each body stamped now (nanosecond fraction, as agents send). */
export function heartbeatStream(nodes: number): () => string {
  const templates = Array.from({ length: nodes }, (_, index) => heartbeatTemplate(index));
  let next = 0;
  let sequence = 0;
  return () => {
    const template = templates[next];
    next = (next + 1) % nodes;
    sequence = (sequence + 1) % 1_000_000;
    const stamp = new Date().toISOString().slice(0, 23) + String(sequence).padStart(6, '0') + 'Z';
    return template.prefix + stamp + template.suffix;
  };
}
