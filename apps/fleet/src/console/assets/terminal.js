// A VM's serial console on its page: an xterm.js terminal (xterm.js and its stylesheet are
// served by the controller from its @xterm/xterm package; the page's policy allows the inline
// styles xterm injects, its scripts are files only). It follows the VM's serial log as it
// grows; once the terminal is focused it opens a WebSocket to the VM's serial port through the
// controller: what is typed goes to the guest, its output is written into the terminal. xterm
// draws text as text (never HTML), and keeps a bounded scrollback whatever the guest prints.
'use strict';

(function () {
  const SERIAL_MS = 1000;
  /** Lines kept in the terminal's scrollback; the log keeps the rest. */
  const SCROLLBACK = 5000;

  const pane = document.getElementById('serial');
  if (!pane || typeof Terminal !== 'function') return;
  const status = document.getElementById('terminal-status');
  const disconnectButton = document.getElementById('terminal-disconnect');
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute('content') : '';

  function say(text, state) {
    if (!status) return;
    status.textContent = text;
    status.setAttribute('data-state', state);
  }

  // ---- The terminal, fitted to its pane.
  const term = new Terminal({
    scrollback: SCROLLBACK,
    fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace",
    fontSize: 13,
    theme: { background: '#0f141b', foreground: '#d7e0ea' },
  });
  term.open(pane);
  // The terminal's lines as xterm holds them, for a browser test to read (xterm's renderer draws
  // on animation frames, which a headless test browser may not run).
  window.ppnTerminal = term;

  /**
   * As many columns and rows as the pane holds: a cell's size is the drawn screen's over its
   * columns and rows (no fit addon needed for that).
   */
  function fit() {
    const screen = pane.querySelector('.xterm-screen');
    if (!screen || !screen.offsetWidth || !screen.offsetHeight) return;
    const cellWidth = screen.offsetWidth / term.cols;
    const cellHeight = screen.offsetHeight / term.rows;
    const style = getComputedStyle(pane);
    const width = pane.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const height =
      pane.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    // Less a column for the scroll bar.
    const cols = Math.max(20, Math.floor(width / cellWidth) - 1);
    const rows = Math.max(5, Math.floor(height / cellHeight));
    if (cols !== term.cols || rows !== term.rows) term.resize(cols, rows);
  }
  // The screen is measured once drawn; again whenever the pane's size changes (a window resized).
  let fitPending;
  function fitSoon() {
    clearTimeout(fitPending);
    fitPending = setTimeout(fit, 50);
  }
  requestAnimationFrame(fit);
  if (typeof ResizeObserver === 'function') new ResizeObserver(fitSoon).observe(pane);
  else window.addEventListener('resize', fitSoon);

  /**
   * Writes of the log under way: the queries a guest sent its terminal at boot (a cursor
   * position, the device's attributes) are in the log, and xterm answers them as typed data;
   * replayed, their answers go nowhere (they would open the port and type into the guest).
   */
  let replaying = 0;

  /** The log's text: it has its line breaks as \n alone (a terminal's LF keeps the column). */
  function setText(text) {
    term.reset();
    write(text.replace(/\n/g, '\r\n'));
  }

  function write(text) {
    replaying++;
    term.write(text, function () {
      replaying--;
    });
  }

  // ---- Following the log while no terminal is open.
  let next;
  let following = true;
  let followTimer;

  async function readLog() {
    followTimer = undefined;
    if (!following) return;
    try {
      const url = pane.getAttribute('data-serial') + (next === undefined ? '' : '?from=' + next);
      const response = await fetch(url, { credentials: 'same-origin' });
      if (!following) return;
      if (!response.ok) {
        pane.setAttribute('data-status', String(response.status));
        return;
      }
      const part = await response.json();
      if (!following) return;
      if (part.reset || next === undefined) setText(part.text || '');
      // The log's text has its line breaks as \n alone (a terminal's LF keeps the column).
      else if (part.text) write(part.text.replace(/\n/g, '\r\n'));
      next = part.next;
      pane.setAttribute('data-next', String(next));
    } catch (error) {
      // The next read tries again.
    } finally {
      if (following && followTimer === undefined) followTimer = setTimeout(readLog, SERIAL_MS);
    }
  }

  function follow() {
    following = true;
    next = undefined;
    if (followTimer === undefined) readLog();
  }

  function stopFollowing() {
    following = false;
    clearTimeout(followTimer);
    followTimer = undefined;
  }

  // ---- The terminal: a WebSocket to the VM's serial port, opened when the terminal is focused.
  let socket;
  let pending = [];

  function connect() {
    if (socket) return;
    const url = new URL(pane.getAttribute('data-terminal'), location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    say('Connecting to the serial port...', 'connecting');
    let opened = false;
    const ws = new WebSocket(url.href, ['ppn-terminal', 'csrf.' + csrf]);
    socket = ws;
    ws.binaryType = 'arraybuffer';
    ws.onopen = function () {
      opened = true;
      stopFollowing();
      say('Connected: what you type goes to the VM. Disconnect frees the port.', 'open');
      pane.setAttribute('data-terminal-state', 'open');
      if (disconnectButton) disconnectButton.hidden = false;
      for (const keys of pending) ws.send(keys);
      pending = [];
    };
    ws.onmessage = function (event) {
      // The guest's bytes as they are: xterm decodes UTF-8 across messages.
      term.write(new Uint8Array(event.data));
    };
    ws.onclose = function () {
      socket = undefined;
      pending = [];
      pane.setAttribute('data-terminal-state', 'closed');
      if (disconnectButton) disconnectButton.hidden = true;
      say(
        opened
          ? 'Disconnected: click the console to connect again.'
          : 'The serial port could not be opened: the VM may not be running, another session may hold it (one at a time), or its node may be unreachable. The log is shown.',
        'closed',
      );
      follow();
    };
  }

  /** What xterm says was typed or pasted (paste at most 8 KiB at a time, as before). */
  function send(keys) {
    const bounded = keys.slice(0, 8192);
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(bounded);
    else {
      if (pending.length < 64) pending.push(bounded);
      connect();
    }
  }

  term.onData(function (data) {
    if (replaying > 0) return;
    send(data);
  });
  // Focused (a click, Tab): the port is opened, as before a key is typed.
  pane.addEventListener('focusin', connect);
  if (disconnectButton) {
    disconnectButton.addEventListener('click', function () {
      if (socket) socket.close(1000, 'disconnected on the page');
    });
  }
  // Leaving the page closes the socket at once (the browser would too); the port is freed.
  window.addEventListener('pagehide', function () {
    if (socket) socket.close(1001, 'page closed');
  });

  follow();
})();
