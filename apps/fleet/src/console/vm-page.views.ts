/** A VM's page (/vms/:vm_id): its facts, its copies, its restore form, its console. */
import { FleetVmWithLifeCycle, VmConsole, VmCopies } from '@app/fleet-domain';
import { Html, HtmlValue, html, pathPart } from './html';
import { vmCopiesSection } from './copies.views';
import { terminalSection } from './terminal.views';
import { lastFailure, lifeCycleSummary } from './vm-state.views';
import { ConsoleNode, PageContext, page } from './console.views';
import { actions, portsCell, sshLine, stateCell } from './vm-table.views';
import { moveForm } from './move-drain.views';

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
      ${context.tenant === undefined ? moveForm(vm, nodes) : ''}
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

/** A console read as the page's script takes it. */
export function serialAnswer(read: VmConsole): { text: string; next: number; reset: boolean } {
  return { text: read.text, next: read.next, reset: read.reset };
}
