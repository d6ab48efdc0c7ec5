import { FleetVmWithLifeCycle } from '@app/fleet-domain';
import { Html, html, pathPart } from './html';

const TERMINAL_SCRIPT = '/console/assets/terminal.js';

/**
 * A VM's serial console on its page: its log followed as it grows, and, once focused (a click,
 * Tab), an interactive terminal over a WebSocket to its serial port (terminal.js); Disconnect,
 * leaving the page or closing it frees the port for another session.
 */
export function terminalSection(vm: FleetVmWithLifeCycle): Html {
  const id = pathPart(vm.vm_id);
  return html`<section aria-labelledby="serial-title" class="terminal-section">
    <h2 id="serial-title">Serial console</h2>
    <p class="hint">
      The VM's serial log, following as it grows. Click it (or Tab to it) to type into the VM's
      serial port: Enter shows the login prompt. One session at a time, across every page and
      <code>ppn-fleet vm console --interactive</code>.
    </p>
    <div class="terminal-bar">
      <span id="terminal-status" class="terminal-status" role="status" aria-live="polite"
        >Not connected: click the console to type.</span
      >
      <button type="button" id="terminal-disconnect" hidden>Disconnect</button>
    </div>
    <pre
      id="serial"
      class="serial"
      tabindex="0"
      aria-live="off"
      aria-label="Serial console of ${vm.vm_id}"
      data-serial="/console/vms/${id}/serial"
      data-terminal="/console/vms/${id}/terminal"
    ></pre>
    <script src="${TERMINAL_SCRIPT}" defer></script>
  </section>`;
}
