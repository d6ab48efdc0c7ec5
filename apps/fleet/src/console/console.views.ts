import {
  FleetVmWithLifeCycle,
  MAX_VM_DISK_GB,
  MAX_VM_RAM_MB,
  MAX_VM_VCPUS,
  HeartbeatDiskRoom,
  VM_TYPE_RULE,
  VmConsole,
  VmCopies,
  diskRoomText,
} from '@app/fleet-domain';
import { isIP } from 'node:net';
import { Html, HtmlValue, html, pathPart } from './html';
import { createCopiesFields, vmCopiesSection } from './copies.views';
import { terminalSection } from './terminal.views';
import { publishedPortsField } from './ports-field.views';
import { VmAction, actionsFor, canAnswer, lastFailure, lifeCycleSummary } from './vm-state.views';

/** The VMs table's filters, from the page's query. */
export interface ConsoleFilters {
  tenant?: string;
  node?: string;
}

/** A stored node as the console shows it. */
export interface ConsoleNode {
  node_id: string;
  hostname: string;
  wg_ip: string;
  ram_total_mb: number;
  ram_used_mb: number;
  /** What placement counts as free now (RAM held for VMs being created taken off). */
  ram_available_mb: number;
  kvm_available: boolean;
  reserved: boolean;
  vm_count: number;
  /** Its last heartbeat's disk room; null when its agent reports none. */
  disk_room: HeartbeatDiskRoom | null;
  heartbeat_age_s: number;
  last_heartbeat: string;
  /** Heard from within 30 s; not live: kept, silent, for the VMs it last listed. */
  live: boolean;
  /** Live, but it has missed two heartbeats in a row. */
  late: boolean;
  /** Why placement passes it over for any VM; null when it does not. */
  passed_over: string | null;
  vm_ids: string[];
}

export interface ConsoleOverview {
  version: string;
  /** VM_FLEET_API_TOKEN is not set: anyone who reaches the listener may act. */
  open: boolean;
  taken_at: string;
  nodes: ConsoleNode[];
  /** The VMs the filters let through. */
  vms: FleetVmWithLifeCycle[];
  /** Every tenant of a listed VM, for the filter. */
  tenants: string[];
  filters: ConsoleFilters;
}

/** What every page of a session carries. */
export interface PageContext {
  /** The session's CSRF token, sent back in X-CSRF-Token by the page's script. */
  csrf: string;
  open: boolean;
  version: string;
  /** A tenant's session: the tenant, named in the header. */
  tenant?: string;
}

/** The user a VM's ssh line logs in as (the guest image's). */
export const SSH_USER = 'debian';

const STYLESHEET = '/console/assets/console.css';
const SCRIPT = '/console/assets/console.js';

function documentOf(title: string, body: Html, csrf?: string): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${csrf === undefined ? '' : html`<meta name="csrf-token" content="${csrf}" />`}
        <title>${title} · PPN fleet</title>
        <link rel="stylesheet" href="${STYLESHEET}" />
        <script src="${SCRIPT}" defer></script>
      </head>
      <body>
        ${body}
      </body>
    </html> `;
}

/** A page of a session: the header, the open-API banner, the outcome line, then `content`. */
export function page(title: string, context: PageContext, content: Html): Html {
  return documentOf(
    title,
    html`<header class="bar">
        <a class="brand" href="/">PPN fleet</a>
        <nav aria-label="Console"><a href="/">Overview</a> <a href="/docs">API docs</a></nav>
        <span class="version">controller ${context.version}</span>
        ${context.tenant === undefined ? '' : html`<span class="tenant">tenant ${context.tenant}</span>`}
        ${
          context.open
            ? ''
            : html`<form class="logout" data-action="/logout" data-done="reload">
                <button type="submit">Log out</button>
              </form>`
        }
      </header>
      ${
        context.open
          ? html`<p class="banner" role="alert">
              <strong>The API is open.</strong> VM_FLEET_API_TOKEN is not set: anyone who can reach
              this listener can create, stop and delete VMs. Set it on the controller to require a
              login.
            </p>`
          : ''
      }
      <p id="outcome" class="outcome" role="status" aria-live="polite"></p>
      <main id="main">${content}</main>
      ${confirmDialog()}`,
    context.csrf,
  );
}

/** The login page (VM_FLEET_API_TOKEN set, no session). */
export function loginPage(version: string): Html {
  return documentOf(
    'Log in',
    html`<main id="main" class="login">
      <h1>PPN fleet</h1>
      <form id="login" data-action="/login" data-done="home">
        <label for="token">API token (VM_FLEET_API_TOKEN)</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="current-password"
          required
          maxlength="512"
        />
        <button type="submit">Log in</button>
      </form>
      <p id="outcome" class="outcome" role="status" aria-live="polite"></p>
      <p class="version">controller ${version}</p>
    </main>`,
  );
}

/** The dialog the page's script fills in to confirm a delete or a forget. */
function confirmDialog(): Html {
  return html`<dialog id="confirm" aria-labelledby="confirm-title">
    <form method="dialog">
      <h2 id="confirm-title">Confirm</h2>
      <p id="confirm-text"></p>
      <label for="confirm-input" id="confirm-label"></label>
      <input id="confirm-input" autocomplete="off" spellcheck="false" />
      <div class="buttons">
        <button value="cancel" type="submit">Cancel</button>
        <button id="confirm-ok" value="ok" type="submit" class="danger">Confirm</button>
      </div>
    </form>
  </dialog>`;
}

/** The overview: the live part (refreshed by the script), the filters and the create form. */
export function overviewPage(
  overview: ConsoleOverview,
  context: PageContext,
  /** The operator's table of tenants (tenants.views.ts), under the live part. */
  tenants?: Html,
): Html {
  const query = filterQuery(overview.filters);
  return page(
    'Overview',
    context,
    html`<h1>Fleet overview</h1>
      ${filterForm(overview)}
      <div id="live" data-live="/console/fragments/overview${query}">${overviewLive(overview)}</div>
      ${tenants ?? ''} ${createForm(overview.nodes)}`,
  );
}

function filterQuery(filters: ConsoleFilters): string {
  const parts: string[] = [];
  if (filters.tenant !== undefined) parts.push(`tenant=${pathPart(filters.tenant)}`);
  if (filters.node !== undefined) parts.push(`node=${pathPart(filters.node)}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** The part of the overview the page refreshes every 2 s. */
export function overviewLive(overview: ConsoleOverview): Html {
  const live = overview.nodes.filter((node) => node.live);
  const late = live.filter((node) => node.late);
  const silent = overview.nodes.filter((node) => !node.live);
  const health =
    live.length === 0
      ? html`<span class="bad">No node is live</span>`
      : late.length > 0 || silent.length > 0
        ? html`<span class="warn"
            >${live.length} node(s) live, ${late.length} late, ${silent.length} silent</span
          >`
        : html`<span class="good">${live.length} node(s) live, all on time</span>`;
  return html`<section aria-labelledby="nodes-title">
      <h2 id="nodes-title">Nodes</h2>
      <p class="health">
        ${health} · as of <time datetime="${overview.taken_at}">${overview.taken_at}</time>
      </p>
      ${overview.nodes.length === 0 ? html`<p>No node has sent a heartbeat.</p>` : nodeCards(overview.nodes)}
    </section>
    <section aria-labelledby="vms-title">
      <h2 id="vms-title">VMs</h2>
      ${vmTable(overview.vms, overview.nodes)}
    </section>`;
}

function nodeCards(nodes: ConsoleNode[]): Html {
  return html`<ul class="nodes">
    ${nodes.map(nodeCard)}
  </ul>`;
}

function ramMeter(node: ConsoleNode): Html {
  const free = node.ram_total_mb - node.ram_used_mb;
  const label = `RAM ${node.ram_used_mb} MB used, ${free} MB free of ${node.ram_total_mb} MB`;
  return html`<meter
      class="ram"
      min="0"
      max="${node.ram_total_mb}"
      value="${node.ram_used_mb}"
      high="${Math.floor(node.ram_total_mb * 0.85)}"
      aria-label="${label}"
      title="${label}"
    >
      ${node.ram_used_mb} MB
    </meter>
    <span class="ram-text"
      >${node.ram_used_mb} MB used · ${free} MB free · ${node.ram_available_mb} MB for VMs</span
    >`;
}

/** What one more VM disk may have, of what all may; nothing for an agent that reports none. */
function diskLine(node: ConsoleNode): Html | string {
  const room = node.disk_room;
  if (room === null) return '';
  const thin = room.overcommit === 1 ? '' : ` (room ${room.room_mb} MB x ${room.overcommit})`;
  const text = `Disk ${diskRoomText(room)} committable for VM disks${thin} · reserve ${room.reserve_mb} MB`;
  return html`<span class="disk-text">${text}</span>`;
}

function nodeStatus(node: ConsoleNode): Html {
  if (!node.live) return html`<span class="badge bad">silent</span>`;
  if (node.late) return html`<span class="badge warn">late</span>`;
  return html`<span class="badge good">live</span>`;
}

function nodeCard(node: ConsoleNode): Html {
  return html`<li class="node${node.live ? '' : ' silent'}" data-node="${node.node_id}">
    <h3><a href="/nodes/${pathPart(node.node_id)}">${node.node_id}</a> ${nodeStatus(node)}</h3>
    <p class="host">host <span class="hostname">${node.hostname}</span> · ${node.wg_ip}</p>
    ${ramMeter(node)} ${node.disk_room === null ? '' : html`<p class="disk">${diskLine(node)}</p>`}
    <p>
      KVM ${node.kvm_available ? 'yes' : 'no'}${node.reserved ? ' · reserved' : ''} ·
      ${node.vm_count} VM(s) · heartbeat ${node.heartbeat_age_s} s ago
    </p>
    ${node.passed_over === null ? '' : html`<p class="passed-over">Placement passes it over: ${node.passed_over}</p>`}
  </li>`;
}

/** The ssh line of a VM whose port 22 is forwarded, on its node's address. */
export function sshLine(vm: FleetVmWithLifeCycle, wgIp: string | undefined): string | undefined {
  // A VM that cannot answer (stopped, in Error, being stopped, its node silent) gets none.
  if (!canAnswer(vm) || wgIp === undefined || isIP(wgIp) === 0) {
    return undefined;
  }
  const forward = vm.host_ports.find(
    ({ guest_port, protocol }) => guest_port === 22 && protocol === 'tcp',
  );
  if (forward === undefined) return undefined;
  return `ssh -p ${forward.host_port} ${SSH_USER}@${wgIp}`;
}

/** The accelerator the VM's agent reports (kvm, tcg); "—" before its start or from an old agent. */
function acceleratorOf(vm: FleetVmWithLifeCycle): string {
  return vm.accel ?? '—';
}

function stateCell(vm: FleetVmWithLifeCycle): Html {
  const lifeCycle = vm.life_cycle;
  const operation = lifeCycle?.operation
    ? html` <span class="badge">${lifeCycle.operation}</span>`
    : '';
  return html`<span class="state state-${vm.state.toLowerCase()}">${vm.state}</span>${operation}`;
}

function portsCell(vm: FleetVmWithLifeCycle): Html | string {
  if (vm.host_ports.length === 0) return '—';
  return html`${vm.host_ports.map(
    ({ host_port, guest_port, protocol }, index) =>
      html`${index > 0 ? ', ' : ''}${host_port}→${guest_port}/${protocol}`,
  )}`;
}

/** An action's button, as a form the page's script sends with the session's CSRF token. */
function actionForm(vm: FleetVmWithLifeCycle, action: VmAction): Html {
  const confirm = action === 'delete' || action === 'forget' ? action : undefined;
  const route = action === 'force stop' ? 'stop' : action;
  const label = `${action[0].toUpperCase()}${action.slice(1)}`;
  const title =
    action === 'stop'
      ? 'ACPI power-down; QEMU is ended after 60 s'
      : action === 'force stop'
        ? 'QEMU ended at once, as a power cut'
        : undefined;
  return html`<form
    class="action"
    data-action="/console/vms/${pathPart(vm.vm_id)}/${route}"
    ${
      confirm === undefined
        ? ''
        : html` data-confirm="${confirm}" data-vm="${vm.vm_id}" data-node="${vm.node_id}"`
    }
  >
    ${action === 'force stop' ? html`<input type="hidden" name="force" value="true" data-type="boolean" />` : ''}
    <button
      type="submit"
      class="${confirm === undefined ? '' : 'danger'}"
      aria-label="${label} ${vm.vm_id}"
      ${title === undefined ? '' : html`title="${title}"`}
    >
      ${label}
    </button>
  </form>`;
}

/** The actions a VM's row offers: those its state allows (actionsFor). */
function actions(vm: FleetVmWithLifeCycle): Html {
  return html`${actionsFor(vm).map((action) => actionForm(vm, action))}`;
}

/** The VMs as a table (a list of cards on a phone, by the stylesheet). */
export function vmTable(vms: FleetVmWithLifeCycle[], nodes: ConsoleNode[]): Html {
  if (vms.length === 0) return html`<p class="empty">No VM.</p>`;
  const wgIps = new Map(nodes.map((node) => [node.node_id, node.wg_ip]));
  return html`<div class="table-wrap">
    <table class="vms">
      <thead>
        <tr>
          <th scope="col">VM</th>
          <th scope="col">State</th>
          <th scope="col">Desired</th>
          <th scope="col">Node</th>
          <th scope="col">Accel.</th>
          <th scope="col">Type</th>
          <th scope="col">Tenant</th>
          <th scope="col">RAM / vCPU</th>
          <th scope="col">Ports</th>
          <th scope="col">ssh</th>
          <th scope="col">Actions</th>
        </tr>
      </thead>
      <tbody>
        ${vms.map((vm) => {
          const ssh = sshLine(vm, wgIps.get(vm.node_id));
          return html`<tr
            data-vm="${vm.vm_id}"
            ${vm.node_silent_since === undefined ? '' : html` class="silent"`}
          >
            <th scope="row" data-label="VM">
              <a href="/vms/${pathPart(vm.vm_id)}">${vm.vm_id}</a>
            </th>
            <td data-label="State">
              ${stateCell(vm)}${
                vm.node_silent_since === undefined
                  ? ''
                  : html` <span
                      class="badge bad"
                      title="its node's agent has not listed it since ${vm.node_silent_since}"
                      >node silent</span
                    >`
              }${vm.life_cycle?.reason ? html`<br /><span class="reason">${vm.life_cycle.reason}</span>` : ''}
            </td>
            <td data-label="Desired">${vm.life_cycle?.desired_state ?? '—'}</td>
            <td data-label="Node"><a href="/nodes/${pathPart(vm.node_id)}">${vm.node_id}</a></td>
            <td data-label="Accel.">${acceleratorOf(vm)}</td>
            <td data-label="Type">${vm.vm_type}</td>
            <td data-label="Tenant">${vm.tenant_id ?? '—'}</td>
            <td data-label="RAM / vCPU">${vm.ram_alloc_mb} MB / ${vm.vcpu_count}</td>
            <td data-label="Ports">${portsCell(vm)}</td>
            <td data-label="ssh">
              ${ssh === undefined ? '—' : html`<code class="ssh">${ssh}</code> <button type="button" class="copy" data-copy="${ssh}" aria-label="Copy the ssh command for ${vm.vm_id}">Copy</button>`}
            </td>
            <td data-label="Actions" class="actions">${actions(vm)}</td>
          </tr>`;
        })}
      </tbody>
    </table>
  </div>`;
}

function options(values: string[], selected: string | undefined, anyLabel: string): Html {
  return html`<option value="">${anyLabel}</option>
    ${values.map(
      (value) =>
        html`<option value="${value}" ${value === selected ? html` selected` : ''}>
          ${value}
        </option>`,
    )}`;
}

function filterForm(overview: ConsoleOverview): Html {
  const tenants = overview.tenants.includes(overview.filters.tenant ?? '')
    ? overview.tenants
    : [...overview.tenants, ...(overview.filters.tenant ? [overview.filters.tenant] : [])];
  return html`<form class="filters" method="get" action="/" aria-label="Filter the VMs">
    <label for="filter-tenant">Tenant</label>
    <select id="filter-tenant" name="tenant">
      ${options(tenants, overview.filters.tenant, 'any tenant')}
    </select>
    <label for="filter-node">Node</label>
    <select id="filter-node" name="node">
      ${options(
        overview.nodes.map((node) => node.node_id),
        overview.filters.node,
        'any node',
      )}
    </select>
    <button type="submit">Filter</button> <a href="/">Clear</a>
  </form>`;
}

/** The create form: CreateVmRequest's fields, with its limits. */
export function createForm(nodes: ConsoleNode[]): Html {
  return html`<section aria-labelledby="create-title">
    <h2 id="create-title">Create a VM</h2>
    <form id="create" class="create" data-action="/console/vms" data-done="reset">
      <label for="vm_type">Type</label>
      <input
        id="vm_type"
        name="vm_type"
        required
        maxlength="63"
        pattern="[A-Za-z0-9\\-]{1,63}"
        title="${VM_TYPE_RULE}"
        placeholder="web"
      />
      <label for="ram_mb">RAM (MB)</label>
      <input
        id="ram_mb"
        name="ram_mb"
        type="number"
        data-type="integer"
        required
        min="1"
        max="${MAX_VM_RAM_MB}"
        step="1"
        value="512"
      />
      <label for="vcpu_count">vCPUs</label>
      <input
        id="vcpu_count"
        name="vcpu_count"
        type="number"
        data-type="integer"
        required
        min="1"
        max="${MAX_VM_VCPUS}"
        step="1"
        value="1"
      />
      <label for="disk_gb">Disk (GiB, optional)</label>
      <input
        id="disk_gb"
        name="disk_gb"
        type="number"
        data-type="integer"
        min="1"
        max="${MAX_VM_DISK_GB}"
        step="1"
        placeholder="the base image's size"
      />
      <label for="tenant_id">Tenant (optional)</label>
      <input
        id="tenant_id"
        name="tenant_id"
        maxlength="128"
        pattern="[A-Za-z0-9][A-Za-z0-9._\\-]{0,127}"
        placeholder="acme"
      />
      <label for="preferred_node">Place on node</label>
      <select id="preferred_node" name="preferred_node">
        ${options(
          nodes.filter((node) => node.live).map((node) => node.node_id),
          undefined,
          'placement chooses',
        )}
      </select>
      ${publishedPortsField()}
      <span class="check"
        ><input id="prefer_kvm" name="prefer_kvm" type="checkbox" data-type="boolean" />
        <label for="prefer_kvm">Prefer a KVM node</label></span
      >
      ${createCopiesFields()}
      <button type="submit">Create</button>
    </form>
  </section>`;
}

/** A node's own page: its facts, why placement passes it over, its VMs. */
export function nodePage(
  node: ConsoleNode,
  vms: FleetVmWithLifeCycle[],
  nodes: ConsoleNode[],
  context: PageContext,
): Html {
  return page(
    `Node ${node.node_id}`,
    context,
    html`<h1>Node ${node.node_id} ${nodeStatus(node)}</h1>
      <div id="live" data-live="/console/fragments/nodes/${pathPart(node.node_id)}">
        ${nodeLive(node, vms, nodes)}
      </div>`,
  );
}

/** The refreshed part of a node's page. */
export function nodeLive(
  node: ConsoleNode,
  vms: FleetVmWithLifeCycle[],
  nodes: ConsoleNode[],
): Html {
  return html`<dl class="facts">
      <dt>Host name</dt>
      <dd class="hostname">${node.hostname}</dd>
      <dt>Address</dt>
      <dd>${node.wg_ip}</dd>
      <dt>Last heartbeat</dt>
      <dd>
        <time datetime="${node.last_heartbeat}">${node.last_heartbeat}</time>
        (${node.heartbeat_age_s} s ago)${node.late ? ' · late: missed two heartbeats' : ''}
      </dd>
      <dt>RAM</dt>
      <dd>${ramMeter(node)}</dd>
      <dt>Disk</dt>
      <dd>${node.disk_room === null ? 'not reported by its agent' : diskLine(node)}</dd>
      <dt>KVM</dt>
      <dd>${node.kvm_available ? 'yes' : 'no'}</dd>
      <dt>Reserved</dt>
      <dd>${node.reserved ? 'yes: used only when no other node fits' : 'no'}</dd>
      <dt>Placement</dt>
      ${
        node.passed_over === null
          ? html`<dd>takes VMs that fit its free RAM</dd>`
          : html`<dd class="passed-over">passes it over: ${node.passed_over}</dd>`
      }
    </dl>
    <h2>Its VMs</h2>
    ${vmTable(vms, nodes)}`;
}

/**
 * A VM's own page: its facts, its actions, its copies and backups (`copies`, as of `nowMs`;
 * undefined: read at the first refresh), its serial console followed by the script.
 */
export function vmPage(
  vm: FleetVmWithLifeCycle,
  nodes: ConsoleNode[],
  context: PageContext,
  nowMs: number,
  copies?: VmCopies,
): Html {
  return page(
    `VM ${vm.vm_id}`,
    context,
    html`<h1>VM ${vm.vm_id}</h1>
      <div id="live" data-live="/console/fragments/vms/${pathPart(vm.vm_id)}">
        ${vmLive(vm, nodes, nowMs)}
      </div>
      ${vmCopiesSection(vm.vm_id, copies, nowMs)} ${terminalSection(vm)}`,
  );
}

/** The refreshed part of a VM's page. */
export function vmLive(vm: FleetVmWithLifeCycle, nodes: ConsoleNode[], nowMs: number): Html {
  const lifeCycle = vm.life_cycle;
  const facts: Array<[string, HtmlValue]> = [
    ['State', stateCell(vm)],
    ['Life cycle', html`<span class="summary">${lifeCycleSummary(vm, nowMs)}</span>`],
    ['Desired state', lifeCycle?.desired_state ?? '—'],
    ['Operation', lifeCycle?.operation ?? '—'],
    ['Failures in a row', lifeCycle?.restart_count ?? '—'],
    ['Reason', lifeCycle?.reason ?? '—'],
    ['Last failure', lastFailure(vm) ?? '—'],
    ['Node', html`<a href="/nodes/${pathPart(vm.node_id)}">${vm.node_id}</a>`],
    ['Node silent since', vm.node_silent_since ?? '—'],
    ['Type', vm.vm_type],
    ['Tenant', vm.tenant_id ?? '—'],
    ['RAM / vCPUs', `${vm.ram_alloc_mb} MB / ${vm.vcpu_count}`],
    ['Ports', portsCell(vm)],
    ['ssh', sshLine(vm, nodes.find((node) => node.node_id === vm.node_id)?.wg_ip) ?? '—'],
    ['Started', vm.started_at ?? '—'],
  ];
  return html`<dl class="facts">
      ${facts.map(
        ([name, value]) =>
          html`<dt>${name}</dt>
            <dd>${value}</dd>`,
      )}
    </dl>
    <div class="actions">${actions(vm)}</div>
    ${restoreForm(vm)}`;
}

/**
 * The VM page's restore: where to (a node; empty: the node holding its freshest copy), from
 * what (a node or a backup id; empty: the freshest copy), as a new VM or not; sent after the
 * VM's id is typed out (the page's script), with the session's CSRF token.
 */
function restoreForm(vm: FleetVmWithLifeCycle): Html {
  const id = pathPart(vm.vm_id);
  return html`<details class="restore">
    <summary>Restore from a copy or backup</summary>
    <form
      class="action"
      data-action="/console/vms/${id}/restore"
      data-confirm="restore"
      data-vm="${vm.vm_id}"
      data-node="${vm.node_id}"
    >
      <label for="restore-to-${id}">To node</label>
      <input
        id="restore-to-${id}"
        name="to"
        maxlength="128"
        autocomplete="off"
        placeholder="the node holding its copy"
      />
      <label for="restore-from-${id}">From (node or backup id)</label>
      <input
        id="restore-from-${id}"
        name="from"
        maxlength="128"
        autocomplete="off"
        placeholder="the freshest copy"
      />
      <label
        ><input type="checkbox" name="as_new" data-type="boolean" /> As a new VM (new id, new
        ports)</label
      >
      <button type="submit" class="danger" aria-label="Restore ${vm.vm_id}">Restore</button>
    </form>
  </details>`;
}

/** The page for a VM or node id that nothing lists. */
export function notFoundPage(what: string, context: PageContext): Html {
  return page(
    'Not found',
    context,
    html`<h1>Not found</h1>
      <p>${what}</p>
      <p><a href="/">Back to the overview</a></p>`,
  );
}

/** A console read as the page's script takes it. */
export function serialAnswer(read: VmConsole): { text: string; next: number; reset: boolean } {
  return { text: read.text, next: read.next, reset: read.reset };
}
