/** The VM page's Move form and the node page's Drain / Undrain, with the "draining" mark. */
import { FleetVmWithLifeCycle, VmState } from '@app/fleet-domain';
import { Html, html, pathPart } from './html';
import { ConsoleNode } from './console.views';

/** The "draining" mark of a drained node, beside its live / late / silent badge. */
export function drainingBadge(node: ConsoleNode): Html | string {
  if (!node.drained_since) return '';
  return html` <span
    class="badge warn draining"
    title="drained since ${node.drained_since}: placement passes it over until undrained"
    >draining</span
  >`;
}

/**
 * A Running or Stopped VM's Move (live when it runs, cold when stopped): to the node chosen in
 * the list, or (empty) the one placement chooses among the live nodes but its own. The drained
 * ones are not offered; placement would refuse them.
 */
export function moveForm(vm: FleetVmWithLifeCycle, nodes: ConsoleNode[]): Html | string {
  if (vm.node_silent_since !== undefined) return '';
  if (vm.state !== VmState.Running && vm.state !== VmState.Stopped) return '';
  const id = pathPart(vm.vm_id);
  const targets = nodes.filter(
    (node) => node.live && node.node_id !== vm.node_id && !node.drained_since,
  );
  // No reload: the outcome stays shown; the VM's facts (its node) are refreshed.
  return html`<form class="action move" data-action="/console/vms/${id}/move">
    <label for="move-to-${id}">Move ${vm.state === VmState.Running ? 'live' : 'cold'} to</label>
    <select id="move-to-${id}" name="to">
      <option value="">the node placement chooses</option>
      ${targets.map((node) => html`<option value="${node.node_id}">${node.node_id}</option>`)}
    </select>
    <button type="submit" aria-label="Move ${vm.vm_id}">Move</button>
  </form>`;
}

/**
 * A node's Drain (its VMs moved off it, placement passing it over) or Undrain, in the node's
 * refreshed part (a tenant's session has no node pages).
 */
export function drainForm(node: ConsoleNode): Html {
  const id = pathPart(node.node_id);
  const action = node.drained_since ? 'undrain' : 'drain';
  const title = node.drained_since
    ? 'placement may choose it again; VMs moved off stay where they went'
    : 'placement passes it over; each of its VMs is moved to another node, two at a time';
  // No reload: the outcome (each VM's) stays shown, the node's part of the page refreshed.
  return html`<form class="action drain" data-action="/console/nodes/${id}/${action}">
    <button
      type="submit"
      aria-label="${action === 'drain' ? 'Drain' : 'Undrain'} node ${node.node_id}"
      title="${title}"
    >
      ${action === 'drain' ? 'Drain' : 'Undrain'}
    </button>
  </form>`;
}
