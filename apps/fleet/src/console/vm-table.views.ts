/** The VMs table, on the overview and a node's page: a row per VM, its ssh line and its actions. */
import { FleetVmWithLifeCycle } from '@app/fleet-domain';
import { isIP } from 'node:net';
import { Html, html, pathPart } from './html';
import { VmAction, actionsFor, canAnswer } from './vm-state.views';
import { ConsoleNode, SSH_USER } from './console.views';

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

export function stateCell(vm: FleetVmWithLifeCycle): Html {
  const lifeCycle = vm.life_cycle;
  const operation = lifeCycle?.operation
    ? html` <span class="badge">${lifeCycle.operation}</span>`
    : '';
  return html`<span class="state state-${vm.state.toLowerCase()}">${vm.state}</span>${operation}`;
}

export function portsCell(vm: FleetVmWithLifeCycle): Html | string {
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
export function actions(vm: FleetVmWithLifeCycle): Html {
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
