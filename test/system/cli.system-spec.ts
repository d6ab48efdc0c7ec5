import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(90_000);

/**
 * `ppn-fleet`, the built command (dist) run as a real process, against a real controller and a
 * real agent starting real QEMU (TCG, a blank base image made here).
 */
const NODE_ID = 'cli-node-a';
const API_TOKEN = 'cli-system-spec-api-token-0123456789';
const SECRET = 'cli-system-spec-fleet-node-secret-0123456789';

const workDir = scratchFolder('cli-');
const baseImage = join(workDir, 'base.qcow2');

/** A file only its owner may read, as the daemons (and the CLI) want a secret. */
function secretFile(name: string, content: string): string {
  const path = join(workDir, name);
  writeFileSync(path, `${content}\n`, { mode: 0o600 });
  return path;
}

interface ListedVm {
  vm_id: string;
  state: string;
  node_id: string;
}

describe('ppn-fleet against a controller and an agent', () => {
  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    await listeningFleetDaemon();
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE_ID,
        VM_WG_IP: '127.0.0.5',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, NODE_ID),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: baseImage,
      }),
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  it('nodes: an aligned table of the live nodes; --json: GET /v1/nodes as is', async () => {
    const run = await ppnFleet(['nodes']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const [header, row] = run.stdout.split('\n');
    expect(header).toMatch(/^NODE +HOSTNAME +WG IP +RAM FREE +VMS +KVM +RESERVED +LAST BEAT$/);
    expect(row).toMatch(new RegExp(`^${NODE_ID} +\\S+ +127\\.0\\.0\\.5 +\\d+ MB +0 `));
    // Not a terminal: no colour codes.
    expect(run.stdout).not.toContain('\u001b[');

    const json = await ppnFleet(['nodes', '--json']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as Array<{ node_id: string }>).map((n) => n.node_id)).toEqual([
      NODE_ID,
    ]);
  });

  it('vm create --wait-running reaches Running; vms --json is GET /v1/vms; status and vm delete', async () => {
    const created = await ppnFleet([
      'vm',
      'create',
      '--type',
      'cli-e2e',
      '--ram',
      '64',
      '--vcpus',
      '1',
      '--tenant',
      'acme',
      // A blank base image boots no guest: nothing answers SSH, so Running is all to wait for.
      '--wait-running',
      '--timeout',
      '60',
    ]);
    expect(created.code).toBe(0);
    const vmId = /^created (\S+) \(cli-e2e, 64 MB, 1 vCPU\) on cli-node-a: /.exec(
      created.stdout,
    )?.[1];
    expect(vmId).toBeDefined();
    expect(created.stdout).toContain(`${vmId} is Running on ${NODE_ID}`);
    // The progress line went to stderr, never to stdout.
    expect(created.stderr).toMatch(new RegExp(`${vmId} on ${NODE_ID}: Provisioning|^$`));

    const listed = await ppnFleet(['vms', '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual(await getJson('/v1/vms'));
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ vm_id: vmId, state: 'Running', node_id: NODE_ID }),
    ]);

    const table = await ppnFleet(['vms', '--tenant', 'acme']);
    expect(table.code).toBe(0);
    // Every VM has a copy policy (the controller's defaults): the COPY column shows its age.
    expect(table.stdout).toMatch(/^VM +TYPE +STATE +RAM +VCPUS +ACCEL +TENANT +NODE +SSH +COPY$/m);
    expect(table.stdout).toMatch(
      // The test's agent runs VMs under TCG (VM_ACCEL=tcg, see startAgent).
      new RegExp(`^${vmId} +cli-e2e +Running +64 MB +1 +tcg +acme +${NODE_ID} `, 'm'),
    );
    expect((await ppnFleet(['vms', '--tenant', 'nobody'])).stdout).toBe('no VMs\n');

    const status = await ppnFleet(['status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('1 node(s), 1 VM(s)');
    expect(status.stdout).toMatch(new RegExp(`^${NODE_ID} +\\[#*\\.*\\] +64 MB +\\d+ MB +1 `, 'm'));
    expect(status.stdout).toContain(
      'VMs: 1 Running, 0 Stopped, 0 Provisioning, 0 Error (running under KVM: 0, under TCG: 1)',
    );
    expect(status.stdout).toContain('Missing beats: none');

    const deleted = await ppnFleet(['vm', 'delete', vmId!]);
    expect(deleted).toMatchObject({ code: 0, stdout: `deleted ${vmId}\n` });
    await eventually(
      `${vmId} gone from GET /v1/vms`,
      async () => ((await getJson<ListedVm[]>('/v1/vms')).length === 0 ? true : undefined),
      10_000,
    );
    const again = await ppnFleet(['vm', 'delete', vmId!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`ppn-fleet: vm ${vmId} is not listed on any live node\n`);
  });

  it('an unplaceable create exits 1 with the placement reason, as the API gave it', async () => {
    const run = await ppnFleet([
      'vm',
      'create',
      '--type',
      'huge',
      '--ram',
      '1048576',
      '--vcpus',
      '1',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(new RegExp(`^ppn-fleet: .*${NODE_ID}: needs \\d+ MB, has \\d+ MB`));
  });

  it('exits 3 when the controller cannot be reached, 2 on a usage error', async () => {
    const unreachable = await ppnFleet(['nodes', '--endpoint', 'http://127.0.0.1:59999']);
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain(
      'cannot reach the controller at http://127.0.0.1:59999: ECONNREFUSED',
    );
    const fromEnvironment = await ppnFleet(['status'], {
      VM_FLEET_ENDPOINT: 'http://127.0.0.1:59999',
    });
    expect(fromEnvironment.code).toBe(3);

    expect((await ppnFleet(['nodes', '--endpoint', 'ftp://x'])).code).toBe(2);
    expect((await ppnFleet(['vm', 'create', '--type', 'web'])).code).toBe(2);
    expect((await ppnFleet(['no-such-command'])).code).toBe(2);
  });

  it('node-token A prints what the openssl one-liner prints, and nothing else', async () => {
    const openssl = execFileSync(
      'sh',
      [
        '-c',
        'printf "%s" "ppn-node-token:v1:$1" | openssl dgst -sha256 -hmac "$2" -binary | openssl base64 -A | tr "+/" "-_" | tr -d "="',
        'sh',
        'A',
        SECRET,
      ],
      { encoding: 'utf8' },
    );
    const direct = await ppnFleet(['node-token', 'A'], { VM_FLEET_NODE_SECRET: SECRET });
    expect(direct).toEqual({ code: 0, stdout: `${openssl}\n`, stderr: '' });
    const fromFile = await ppnFleet(['node-token', 'A'], {
      VM_FLEET_NODE_SECRET_FILE: secretFile('node-secret', SECRET),
    });
    expect(fromFile).toEqual(direct);

    const short = await ppnFleet(['node-token', 'A'], { VM_FLEET_NODE_SECRET: 'x'.repeat(31) });
    expect(short.code).toBe(2);
    expect(short.stdout).toBe('');
    expect(short.stderr).toContain('VM_FLEET_NODE_SECRET must be 32 to 1024 characters');
    expect(short.stderr).not.toContain('x'.repeat(31));
    expect((await ppnFleet(['node-token', 'A'])).code).toBe(2);
    expect((await ppnFleet(['node-token', '../A'], { VM_FLEET_NODE_SECRET: SECRET })).code).toBe(2);
  });
});

describe('ppn-fleet against a controller with VM_FLEET_API_TOKEN', () => {
  beforeAll(async () => {
    const fleet = startFleetDaemon({ VM_FLEET_API_TOKEN: API_TOKEN });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
  });

  it('without the token exits non-zero naming VM_FLEET_API_TOKEN; with it, from the variable or its file, works', async () => {
    const without = await ppnFleet(['nodes']);
    expect(without.code).toBe(1);
    expect(without.stdout).toBe('');
    expect(without.stderr).toContain('VM_FLEET_API_TOKEN');

    const wrong = await ppnFleet(['status'], { VM_FLEET_API_TOKEN: `${API_TOKEN}-not` });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('VM_FLEET_API_TOKEN');
    expect(wrong.stderr).not.toContain(API_TOKEN);

    const withToken = await ppnFleet(['nodes', '--json'], { VM_FLEET_API_TOKEN: API_TOKEN });
    expect(withToken).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    const fromFile = await ppnFleet(['vms', '--json'], {
      VM_FLEET_API_TOKEN_FILE: secretFile('api-token', API_TOKEN),
    });
    expect(fromFile).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });
});
