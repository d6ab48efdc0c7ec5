/**
 * `npm run screenshot`: docs/console.png, the web console's fleet overview at 1280 px as the
 * README shows it. The controller runs in this process (both listeners on free loopback ports,
 * an API token set), two stub agents answer for their nodes' VMs, and Debian's chromium logs in
 * and takes the picture: no network but loopback, nothing left behind.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { chromium } from 'playwright-core';
import { createFleetApp, createFleetOpsApp } from '../../apps/fleet/src/bootstrap';
import { loadFleetConfig } from '../../apps/fleet/src/config/fleet-config.load';
import { CHROMIUM, CHROMIUM_ARGS } from './browser';
import { heartbeat, vmRecord } from './heartbeats';
import { StubAgent, json } from './stub-agent';

const OUTPUT = join(__dirname, '../../docs/console.png');
const API_TOKEN = 'console-screenshot-api-token-0123456789';

interface ShownVm {
  vm_id: string;
  vm_type: string;
  tenant_id: string | null;
  ram: number;
  state: 'Running' | 'Stopped';
  port: number;
}

const NODES: Array<{ node_id: string; wg_ip: string; kvm: boolean; used: number; vms: ShownVm[] }> =
  [
    {
      node_id: 'desk-01',
      wg_ip: '127.0.0.11',
      kvm: true,
      used: 9216,
      vms: [
        {
          vm_id: 'vm-3c87f59411dee505',
          vm_type: 'db',
          tenant_id: null,
          ram: 2048,
          state: 'Running',
          port: 36177,
        },
        {
          vm_id: 'vm-dd4eebf55e062585',
          vm_type: 'web',
          tenant_id: 'acme',
          ram: 1024,
          state: 'Running',
          port: 39753,
        },
      ],
    },
    {
      node_id: 'desk-02',
      wg_ip: '127.0.0.12',
      kvm: false,
      used: 5120,
      vms: [
        {
          vm_id: 'vm-892ef28497cae586',
          vm_type: 'build',
          tenant_id: 'acme',
          ram: 1024,
          state: 'Stopped',
          port: 45293,
        },
      ],
    },
  ];

function url(app: NestExpressApplication): string {
  return `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
}

async function main(): Promise<void> {
  const config = loadFleetConfig({ VM_FLEET_API_TOKEN: API_TOKEN, VM_FLEET_OPS_ADDR: 'off' });
  const fleet = await createFleetApp(config, { logger: false });
  await fleet.listen(0, '127.0.0.1');
  const ops = await createFleetOpsApp(fleet, { logger: false });
  await ops.listen(0, '127.0.0.1');
  const agents: StubAgent[] = [];
  const profile = mkdtempSync(join(tmpdir(), 'console-screenshot-'));
  try {
    for (const node of NODES) {
      const agent = await new StubAgent((call, res) => {
        if (call.url.startsWith('/v1/vm-life-cycles')) {
          return json(
            res,
            200,
            node.vms.map((vm) => ({
              vm_id: vm.vm_id,
              state: vm.state,
              desired_state: vm.state === 'Running' ? 'running' : 'stopped',
              operation: null,
              restart_count: 0,
              last_exit: null,
              reason: null,
              next_start_at: null,
            })),
          );
        }
        json(res, 404, { message: 'not here' });
      }).start(node.wg_ip);
      agents.push(agent);
      const sent = await fetch(`${url(fleet)}/v1/nodes/heartbeat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          heartbeat({
            node_id: node.node_id,
            hostname: node.node_id,
            wg_ip: node.wg_ip,
            spawn_port: agent.port,
            ram_total_mb: 32768,
            ram_used_mb: node.used,
            kvm_available: node.kvm,
            vms: node.vms.map((vm) =>
              vmRecord(vm.vm_id, {
                vm_type: vm.vm_type,
                tenant_id: vm.tenant_id,
                ram_alloc_mb: vm.ram,
                state: vm.state as never,
                host_ports: [{ host_port: vm.port, guest_port: 22, protocol: 'tcp' }],
              }),
            ),
          }),
        ),
      });
      if (sent.status !== 200) throw new Error(`heartbeat of ${node.node_id}: ${sent.status}`);
    }
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 800 },
    });
    try {
      const page = await browser.newPage();
      await page.goto(`${url(ops)}/login`);
      await page.getByLabel('API token (VM_FLEET_API_TOKEN)').fill(API_TOKEN);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.locator('tr[data-vm]').first().waitFor();
      await page.screenshot({ path: OUTPUT, fullPage: true });
    } finally {
      await browser.close();
    }
    console.log(`wrote ${OUTPUT}`);
  } finally {
    await Promise.all(agents.map((agent) => agent.stop()));
    await fleet.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
