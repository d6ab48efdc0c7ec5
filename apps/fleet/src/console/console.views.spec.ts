import { FleetVmWithLifeCycle, VmState } from '@app/fleet-domain';
import { ConsoleNode, ConsoleOverview, PageContext, loginPage } from './console.views';
import { nodePage } from './node-page.views';
import { overviewPage } from './overview.views';
import { sshLine } from './vm-table.views';
import { vmPage } from './vm-page.views';

const HOSTILE = '<img src=x onerror=alert(1)>';
const ESCAPED = '&lt;img src=x onerror=alert(1)&gt;';

function node(overrides: Partial<ConsoleNode> = {}): ConsoleNode {
  return {
    node_id: 'n1',
    hostname: 'desk-01',
    wg_ip: '10.8.0.11',
    ram_total_mb: 16384,
    ram_used_mb: 4096,
    ram_available_mb: 12288,
    kvm_available: true,
    reserved: false,
    vm_count: 1,
    disk_room: null,
    heartbeat_age_s: 2,
    last_heartbeat: '2026-08-06T12:00:00.000Z',
    live: true,
    late: false,
    passed_over: null,
    vm_ids: ['vm-1'],
    fenced_vm_ids: [],
    ...overrides,
  };
}

function vm(overrides: Partial<FleetVmWithLifeCycle> = {}): FleetVmWithLifeCycle {
  return {
    vm_id: 'vm-1',
    vm_type: 'web',
    state: VmState.Running,
    ram_alloc_mb: 1024,
    vcpu_count: 2,
    started_at: null,
    tenant_id: 'acme',
    host_ports: [{ host_port: 22022, guest_port: 22, protocol: 'tcp' }],
    node_id: 'n1',
    life_cycle: null,
    ...overrides,
  };
}

function overview(overrides: Partial<ConsoleOverview> = {}): ConsoleOverview {
  return {
    version: '0.1.0',
    open: false,
    taken_at: '2026-08-06T12:00:02.000Z',
    nodes: [node()],
    vms: [vm()],
    tenants: ['acme'],
    filters: {},
    ...overrides,
  };
}

const CONTEXT: PageContext = { csrf: 'csrf-token-of-the-session', open: false, version: '0.1.0' };

describe('console views', () => {
  it('escapes everything a node sends, wherever it is shown', () => {
    const hostileNode = node({ hostname: HOSTILE, passed_over: HOSTILE });
    const hostileVm = vm({
      life_cycle: {
        vm_id: 'vm-1',
        state: VmState.Error,
        desired_state: 'running',
        operation: null,
        restart_count: 3,
        last_exit: HOSTILE,
        reason: HOSTILE,
        next_start_at: null,
      } as FleetVmWithLifeCycle['life_cycle'],
    });
    const pages = [
      overviewPage(overview({ nodes: [hostileNode], vms: [hostileVm] }), CONTEXT),
      nodePage(hostileNode, [hostileVm], [hostileNode], CONTEXT),
      vmPage(hostileVm, [hostileNode], CONTEXT, Date.parse('2026-08-06T12:00:00.000Z')),
    ];
    for (const page of pages) {
      expect(page.text).not.toContain(HOSTILE);
      expect(page.text).toContain(ESCAPED);
    }
  });

  it('loads its one script from a file, and has no inline script or handler', () => {
    for (const page of [overviewPage(overview(), CONTEXT), loginPage('0.1.0')]) {
      expect(page.text.match(/<script/g)).toHaveLength(1);
      expect(page.text).toContain('<script src="/console/assets/console.js" defer></script>');
      expect(page.text).not.toMatch(/\son[a-z]+=|style=|javascript:/i);
    }
  });

  it("carries the session's CSRF token, and the banner only when the API is open", () => {
    const closed = overviewPage(overview(), CONTEXT).text;
    expect(closed).toContain('<meta name="csrf-token" content="csrf-token-of-the-session" />');
    expect(closed).not.toContain('The API is open');
    expect(closed).toContain('Log out');
    const open = overviewPage(overview({ open: true }), { ...CONTEXT, open: true }).text;
    expect(open).toContain('The API is open');
    expect(open).not.toContain('Log out');
  });

  it('shows RAM as a meter with a label, late and silent nodes, and why placement passes one over', () => {
    const text = overviewPage(
      overview({
        nodes: [
          node(),
          node({ node_id: 'n2', late: true, passed_over: 'missed 2 heartbeats' }),
          node({ node_id: 'n3', live: false, passed_over: 'silent since then' }),
        ],
      }),
      CONTEXT,
    ).text;
    expect(text).toMatch(/<meter[^>]* min="0"[^>]* max="16384"[^>]* value="4096"/);
    expect(text).toContain('aria-label="RAM 4096 MB used, 12288 MB free of 16384 MB"');
    expect(text).toContain('2 node(s) live, 1 late, 1 silent');
    expect(text).toContain('Placement passes it over: missed 2 heartbeats');
    expect(text).toContain('<span class="badge bad">silent</span>');
  });

  it("shows a node's disk room beside its RAM, and nothing of it for an agent that reports none", () => {
    const diskRoom = {
      room_mb: 40_960,
      committed_mb: 28_672,
      committable_mb: 12_288,
      reserve_mb: 2_048,
      overcommit: 1,
    };
    const withRoom = node({ disk_room: diskRoom });
    const text = overviewPage(
      overview({ nodes: [withRoom, node({ node_id: 'n2' })] }),
      CONTEXT,
    ).text;
    expect(text).toContain('Disk 12.0 / 40.0 GiB committable for VM disks · reserve 2048 MB');
    expect(text.match(/class="disk"/g)).toHaveLength(1);
    const thin = node({ disk_room: { ...diskRoom, overcommit: 1.5 } });
    expect(nodePage(thin, [], [thin], CONTEXT).text).toContain(
      'Disk 12.0 / 60.0 GiB committable for VM disks (room 40960 MB x 1.5) · reserve 2048 MB',
    );
    expect(nodePage(node(), [], [node()], CONTEXT).text).toContain(
      '<dd>not reported by its agent</dd>',
    );
  });

  it('lists the VMs a node says it fenced on its page, each linked, and nothing when none', () => {
    const fenced = node({ fenced_vm_ids: ['vm-1', 'vm-2'] });
    const text = nodePage(fenced, [], [fenced], CONTEXT).text;
    expect(text).toContain('<dt>Fenced VMs</dt>');
    expect(text).toMatch(
      /its lease in etcd ran out, so its agent ended\s+<a href="\/vms\/vm-1">vm-1<\/a>, <a href="\/vms\/vm-2">vm-2<\/a>;/,
    );
    expect(nodePage(node(), [], [node()], CONTEXT).text).not.toContain('Fenced');
  });

  it('shows the accelerator each VM reports', () => {
    const vms = [vm({ accel: 'kvm' }), vm({ vm_id: 'vm-2', accel: 'tcg' })];
    const text = overviewPage(overview({ vms }), CONTEXT).text;
    expect(text.match(/data-label="Accel\.">[^<]*</g)).toEqual([
      'data-label="Accel.">kvm<',
      'data-label="Accel.">tcg<',
    ]);
  });

  it('lists a VM with its ssh line, "—" for an accelerator not reported, and its actions', () => {
    const text = overviewPage(overview(), CONTEXT).text;
    expect(text).toContain('<code class="ssh">ssh -p 22022 debian@10.8.0.11</code>');
    expect(text).toMatch(/data-label="Accel\.">—</);
    for (const action of ['stop', 'restart', 'delete']) {
      expect(text).toContain(`data-action="/console/vms/vm-1/${action}"`);
    }
    // Running: no Start.
    expect(text).not.toContain('data-action="/console/vms/vm-1/start"');
    expect(text).toContain('data-confirm="delete" data-vm="vm-1" data-node="n1"');
    expect(text).not.toContain('/forget');
  });

  it("offers only forget, with its confirmation, for a silent node's VM, and no ssh line", () => {
    const silent = vm({ node_silent_since: '2026-08-06T11:00:00.000Z' });
    const text = overviewPage(overview({ vms: [silent] }), CONTEXT).text;
    expect(text).toContain('data-confirm="forget"');
    expect(text).not.toContain('/stop"');
    expect(text).not.toContain('ssh -p');
    expect(text).toContain('node silent');
  });

  it("offers a restore on the VM's page only, behind a typed confirmation, escaping what it shows", () => {
    const page = vmPage(vm({ node_id: HOSTILE }), [node()], CONTEXT, 0).text;
    expect(page).toContain('data-action="/console/vms/vm-1/restore"');
    expect(page).toMatch(/data-confirm="restore"\s+data-vm="vm-1"\s+data-node="&lt;img src=x/);
    expect(page).toContain('<dialog id="confirm"');
    expect(page).not.toContain(HOSTILE);
    expect(page).toMatch(/name="to"\s+maxlength="128"/);
    expect(page).toMatch(/name="from"\s+maxlength="128"/);
    expect(page).toMatch(/type="checkbox" name="as_new" data-type="boolean"/);
    expect(overviewPage(overview(), CONTEXT).text).not.toContain('/restore');
  });

  it('encodes ids in links', () => {
    expect(overviewPage(overview(), CONTEXT).text).toContain('href="/vms/vm-1"');
    expect(sshLine(vm(), 'not-an-ip')).toBeUndefined();
    expect(sshLine(vm({ host_ports: [] }), '10.8.0.11')).toBeUndefined();
  });

  it('has a create form with the API limits', () => {
    const text = overviewPage(overview(), CONTEXT).text;
    expect(text).toMatch(/id="ram_mb"[^>]* min="1"[^>]* max="1048576"/s);
    expect(text).toMatch(/id="vcpu_count"[^>]* min="1"[^>]* max="256"/s);
    // The disk's size, optional (left empty: the base image's), as `vm create --disk` takes it.
    expect(text).toMatch(/id="disk_gb"[^>]* data-type="integer"[^>]* min="1"[^>]* max="16384"/s);
    expect(text).not.toMatch(/id="disk_gb"[^>]* required/s);
    expect(text).toMatch(/<option value="n1"\s*>\s*n1\s*<\/option>/);
    expect(text).toMatch(/id="ports"[^>]* data-type="ports"/s);
  });
});
