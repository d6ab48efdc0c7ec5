/** A node's page (/nodes/:node_id), and the RAM and disk lines its card shares. */
import { FleetVmWithLifeCycle, diskRoomText } from '@app/fleet-domain';
import { Html, html, pathPart } from './html';
import { ConsoleNode, PageContext, page } from './console.views';
import { vmTable } from './vm-table.views';
import { drainForm, drainingBadge } from './move-drain.views';

export function ramMeter(node: ConsoleNode): Html {
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
export function diskLine(node: ConsoleNode): Html | string {
  const room = node.disk_room;
  if (room === null) return '';
  const thin = room.overcommit === 1 ? '' : ` (room ${room.room_mb} MB x ${room.overcommit})`;
  const text = `Disk ${diskRoomText(room)} committable for VM disks${thin} · reserve ${room.reserve_mb} MB`;
  return html`<span class="disk-text">${text}</span>`;
}

export function nodeStatus(node: ConsoleNode): Html {
  if (!node.live) return html`<span class="badge bad">silent</span>${drainingBadge(node)}`;
  if (node.late) return html`<span class="badge warn">late</span>${drainingBadge(node)}`;
  return html`<span class="badge good">live</span>${drainingBadge(node)}`;
}

/** etcd mode: the VMs the node says it fenced, each linked; nothing when it fenced none. */
function fencedPart(node: ConsoleNode): Html | string {
  if (node.fenced_vm_ids.length === 0) return '';
  return html`<dt>Fenced VMs</dt>
    <dd class="fenced">
      <span class="badge bad">fenced</span> its lease in etcd ran out, so its agent ended
      ${node.fenced_vm_ids.map(
        (vmId, index) =>
          html`${index === 0 ? '' : ', '}<a href="/vms/${pathPart(vmId)}">${vmId}</a>`,
      )};
      they start again here once its lease is renewed, unless recovered on another node
    </dd>`;
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
      <dt>Drain</dt>
      <dd class="drain">
        ${node.drained_since ? `draining since ${node.drained_since}` : 'not drained'}
        ${drainForm(node)}
      </dd>
      ${fencedPart(node)}
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
