import { FleetVmWithLifeCycle } from '@app/fleet-domain';
import { Html, html, pathPart } from './html';

const TERMINAL_SCRIPT = '/console/assets/terminal.js';
/** xterm.js, served by the controller from its own @xterm/xterm package (no CDN). */
export const XTERM_SCRIPT = '/console/assets/xterm.js';
export const XTERM_STYLESHEET = '/console/assets/xterm.css';

/**
 * A VM's serial console on its page, an xterm.js terminal: its log followed as it grows, and,
 * once focused (a click, Tab), typed into over a WebSocket to its serial port (terminal.js);
 * Disconnect, leaving the page or closing it frees the port for another session. The page's
 * policy allows the inline styles xterm.js injects (VM_PAGE_CSP), its scripts stay files.
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
    <link rel="stylesheet" href="${XTERM_STYLESHEET}" />
    <div
      id="serial"
      class="serial"
      aria-label="Serial console of ${vm.vm_id}"
      data-serial="/console/vms/${id}/serial"
      data-terminal="/console/vms/${id}/terminal"
    ></div>
    <script src="${XTERM_SCRIPT}" defer></script>
    <script src="${TERMINAL_SCRIPT}" defer></script>
  </section>`;
}
