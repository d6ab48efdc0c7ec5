// A VM's serial console on its page (no framework, no inline script or style: xterm.js injects
// <style> elements, which the page's style-src 'self' refuses, so this is a small terminal of
// its own). It follows the VM's serial log
// as it grows; once the console is focused it opens a WebSocket to the VM's serial port through
// the controller and becomes a terminal: keys go to the guest, its output is drawn here. Only
// what a line-oriented serial login needs is interpreted (CR, LF, backspace, tab, erase in
// line, cursor left and right); other escape sequences are dropped. Text goes in textContent
// only, never into HTML.
'use strict';

(function () {
  const SERIAL_MS = 1000;
  /** Lines kept on the page; the log keeps the rest. */
  const MAX_LINES = 5000;
  /** Columns of a line: longer ones wrap. */
  const MAX_COLUMNS = 1024;

  /**
   * The screen's lines and cursor, and the guest output that moves them (`changed` called after
   * each write). Bounded whatever the guest prints: a line wraps at MAX_COLUMNS and the cursor
   * never goes past it (a `\x1b[999999999999C` or a run of tabs cannot make a line of millions
   * of spaces), and MAX_LINES lines are kept.
   */
  function createScreen(changed) {
    let lines = [''];
    let row = 0;
    let col = 0;
    let parse = 'text';
    let csiParams = '';

    function setText(text) {
      lines = [];
      for (const line of text.split('\n')) {
        if (line.length <= MAX_COLUMNS) lines.push(line);
        else
          for (let at = 0; at < line.length; at += MAX_COLUMNS) {
            lines.push(line.slice(at, at + MAX_COLUMNS));
          }
      }
      if (lines.length > MAX_LINES) lines = lines.slice(lines.length - MAX_LINES);
      row = lines.length - 1;
      col = Math.min(lines[row].length, MAX_COLUMNS - 1);
    }

    function moveTo(column) {
      col = Math.max(0, Math.min(MAX_COLUMNS - 1, column));
    }

    function put(ch) {
      if (col >= MAX_COLUMNS) {
        newLine();
        col = 0;
      }
      const line = lines[row];
      const padded = line.length < col ? line + ' '.repeat(col - line.length) : line;
      lines[row] = padded.slice(0, col) + ch + padded.slice(col + 1);
      col++;
    }

    function newLine() {
      row++;
      if (row >= lines.length) lines.push('');
      if (lines.length > MAX_LINES) {
        lines.shift();
        row--;
      }
    }

    function csi(final) {
      const n = parseInt(csiParams, 10);
      if (final === 'K') {
        const line = lines[row];
        if (csiParams === '' || n === 0) lines[row] = line.slice(0, col);
        else if (n === 1) lines[row] = ' '.repeat(Math.min(col, line.length)) + line.slice(col);
        else if (n === 2) lines[row] = '';
      } else if (final === 'C') moveTo(col + (isNaN(n) ? 1 : n));
      else if (final === 'D') moveTo(col - (isNaN(n) ? 1 : n));
      else if (final === 'G') moveTo((isNaN(n) ? 1 : n) - 1);
    }

    /** Guest output, as text decoded from UTF-8. */
    function write(text) {
      for (const ch of text) {
        const code = ch.codePointAt(0);
        if (parse === 'esc') {
          if (ch === '[') {
            parse = 'csi';
            csiParams = '';
          } else if (ch === ']' || ch === 'P' || ch === '_' || ch === '^') parse = 'string';
          else if (ch === '(' || ch === ')') parse = 'charset';
          else parse = 'text';
        } else if (parse === 'csi') {
          if (code >= 0x40 && code <= 0x7e) {
            csi(ch);
            parse = 'text';
          } else if (csiParams.length < 32) csiParams += ch;
        } else if (parse === 'string') {
          // An OSC, DCS, APC or PM string (a title, a clipboard write): dropped to its end.
          if (code === 0x07) parse = 'text';
          else if (code === 0x1b) parse = 'string-esc';
        } else if (parse === 'string-esc') {
          parse = ch === '\\' ? 'text' : 'string';
        } else if (parse === 'charset') {
          parse = 'text';
        } else if (code === 0x1b) parse = 'esc';
        else if (ch === '\r') col = 0;
        else if (ch === '\n') newLine();
        else if (ch === '\b') moveTo(col - 1);
        else if (ch === '\t') moveTo((Math.floor(col / 8) + 1) * 8);
        else if (code >= 0x20 && code !== 0x7f && !(code >= 0x80 && code < 0xa0)) put(ch);
      }
      changed();
    }

    return {
      setText: setText,
      write: write,
      text: function () {
        return lines.join('\n');
      },
      cursor: function () {
        return { row: row, col: col };
      },
    };
  }

  // Outside a page (a unit test), the screen alone.
  if (typeof document === 'undefined') {
    if (typeof module === 'object') module.exports = { createScreen: createScreen };
    return;
  }
  const pre = document.getElementById('serial');
  if (!pre) return;
  const status = document.getElementById('terminal-status');
  const disconnectButton = document.getElementById('terminal-disconnect');
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute('content') : '';

  function say(text, state) {
    if (!status) return;
    status.textContent = text;
    status.setAttribute('data-state', state);
  }

  // ---- The screen: lines of text and a cursor, drawn into the pre's textContent.
  const screen = createScreen(draw);
  let drawPending = false;

  function setText(text) {
    screen.setText(text);
    draw();
  }

  function write(text) {
    screen.write(text);
  }

  function drawNow() {
    drawPending = false;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = screen.text();
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }

  /** Live output is drawn once a frame, however many messages came in it. */
  function draw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(function () {
      if (drawPending) drawNow();
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
      const url = pre.getAttribute('data-serial') + (next === undefined ? '' : '?from=' + next);
      const response = await fetch(url, { credentials: 'same-origin' });
      if (!following) return;
      if (!response.ok) {
        pre.setAttribute('data-status', String(response.status));
        return;
      }
      const part = await response.json();
      if (!following) return;
      if (part.reset || next === undefined) setText(part.text || '');
      // The log's text has its line breaks as \n alone (a terminal's LF keeps the column).
      else if (part.text) write(part.text.replace(/\n/g, '\r\n'));
      // The log's text is on the page before its position is (a reader of data-next sees both).
      drawNow();
      next = part.next;
      pre.setAttribute('data-next', String(next));
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

  // ---- The terminal: a WebSocket to the VM's serial port, opened when the console is focused.
  let socket;
  let pending = [];
  const decoder = new TextDecoder('utf-8');

  function connect() {
    if (socket) return;
    const url = new URL(pre.getAttribute('data-terminal'), location.href);
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
      pre.setAttribute('data-terminal-state', 'open');
      if (disconnectButton) disconnectButton.hidden = false;
      for (const keys of pending) ws.send(keys);
      pending = [];
    };
    ws.onmessage = function (event) {
      write(decoder.decode(new Uint8Array(event.data), { stream: true }));
    };
    ws.onclose = function () {
      socket = undefined;
      pending = [];
      pre.setAttribute('data-terminal-state', 'closed');
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

  function send(keys) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(keys);
    else {
      if (pending.length < 64) pending.push(keys);
      connect();
    }
  }

  const KEYS = {
    Enter: '\r',
    Backspace: '\x7f',
    Tab: '\t',
    Escape: '\x1b',
    ArrowUp: '\x1b[A',
    ArrowDown: '\x1b[B',
    ArrowRight: '\x1b[C',
    ArrowLeft: '\x1b[D',
    Home: '\x1b[H',
    End: '\x1b[F',
    Delete: '\x1b[3~',
    PageUp: '\x1b[5~',
    PageDown: '\x1b[6~',
  };

  /** What a key sends to a serial terminal; undefined for a key it leaves to the browser. */
  function keysOf(event) {
    if (event.metaKey) return undefined;
    // Ctrl-Shift-C and Ctrl-Shift-V stay the browser's copy and paste, as in a terminal.
    if (event.ctrlKey && event.shiftKey) return undefined;
    if (event.ctrlKey && !event.altKey && event.key.length === 1) {
      const upper = event.key.toUpperCase();
      const code = upper.charCodeAt(0);
      if (code >= 0x40 && code <= 0x5f) return String.fromCharCode(code - 0x40);
      return undefined;
    }
    if (Object.prototype.hasOwnProperty.call(KEYS, event.key)) return KEYS[event.key];
    if (event.key.length === 1 || [...event.key].length === 1) {
      return (event.altKey ? '\x1b' : '') + event.key;
    }
    return undefined;
  }

  pre.addEventListener('focus', connect);
  pre.addEventListener('keydown', function (event) {
    const keys = keysOf(event);
    if (keys === undefined) return;
    event.preventDefault();
    send(keys);
  });
  pre.addEventListener('paste', function (event) {
    const text = event.clipboardData ? event.clipboardData.getData('text') : '';
    if (!text) return;
    event.preventDefault();
    send(text.replace(/\r?\n/g, '\r').slice(0, 8192));
  });
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
