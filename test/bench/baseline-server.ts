/**
 * The ceiling of the platform: node:http alone parsing the heartbeat, checking the same
 * fields by hand and storing the same record in a Map. No framework, no validation library.
 */
import { createServer } from 'node:http';

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const STATES = new Set(['Running', 'Stopped', 'Provisioning', 'Error']);

type Json = Record<string, unknown>;
const isInt = (value: unknown, min = 0) => Number.isInteger(value) && (value as number) >= min;

function validVm(vm: unknown): boolean {
  if (typeof vm !== 'object' || vm === null) return false;
  const v = vm as Json;
  return (
    typeof v.vm_id === 'string' &&
    ID.test(v.vm_id) &&
    typeof v.vm_type === 'string' &&
    /^[A-Za-z0-9-]{1,63}$/.test(v.vm_type) &&
    STATES.has(v.state as string) &&
    isInt(v.ram_alloc_mb, 1) &&
    isInt(v.vcpu_count, 1) &&
    (v.started_at === null ||
      v.started_at === undefined ||
      (typeof v.started_at === 'string' && RFC3339.test(v.started_at))) &&
    (v.tenant_id === null ||
      v.tenant_id === undefined ||
      (typeof v.tenant_id === 'string' && ID.test(v.tenant_id))) &&
    (v.host_ports === undefined ||
      (Array.isArray(v.host_ports) &&
        v.host_ports.every(
          (p: Json) =>
            isInt(p.host_port, 1) &&
            isInt(p.guest_port, 1) &&
            (p.protocol === 'tcp' || p.protocol === 'udp'),
        )))
  );
}

function validHeartbeat(body: Json): boolean {
  return (
    typeof body.node_id === 'string' &&
    ID.test(body.node_id) &&
    typeof body.wg_ip === 'string' &&
    typeof body.hostname === 'string' &&
    isInt(body.ram_total_mb) &&
    isInt(body.ram_used_mb) &&
    isInt(body.cpu_cores) &&
    typeof body.cpu_load_pct === 'number' &&
    body.cpu_load_pct >= 0 &&
    body.cpu_load_pct <= 100 &&
    typeof body.kvm_available === 'boolean' &&
    (body.reserved === undefined || typeof body.reserved === 'boolean') &&
    Array.isArray(body.vms) &&
    body.vms.every(validVm) &&
    typeof body.boot_id === 'string' &&
    typeof body.timestamp_utc === 'string' &&
    RFC3339.test(body.timestamp_utc)
  );
}

const nodes = new Map<string, Json>();

const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/v1/nodes/heartbeat') {
    res.writeHead(404).end();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let body: Json;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (!validHeartbeat(body)) {
      res.writeHead(400).end();
      return;
    }
    nodes.set(body.node_id as string, {
      node_id: body.node_id,
      hostname: body.hostname,
      wg_ip: body.wg_ip,
      ram_total_mb: body.ram_total_mb,
      ram_used_mb: body.ram_used_mb,
      kvm_available: body.kvm_available,
      reserved: body.reserved ?? false,
      vms: body.vms,
      boot_id: body.boot_id,
      timestamp_utc: body.timestamp_utc,
      received_at_ms: Date.now(),
    });
    res.writeHead(200).end();
  });
});

server.listen(Number(process.argv[2] ?? 9213), '127.0.0.1', () =>
  process.stdout.write('listening\n'),
);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
