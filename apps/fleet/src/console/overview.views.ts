/** The console's overview page (/): the nodes' cards, the VMs table's filters, the create form. */
import { MAX_VM_DISK_GB, MAX_VM_RAM_MB, MAX_VM_VCPUS, VM_TYPE_RULE } from '@app/fleet-domain';
import { Html, html, pathPart } from './html';
import { createCopiesFields } from './copies.views';
import { publishedPortsField } from './ports-field.views';
import { ConsoleFilters, ConsoleNode, ConsoleOverview, PageContext, page } from './console.views';
import { diskLine, nodeStatus, ramMeter } from './node-page.views';
import { vmTable } from './vm-table.views';

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
