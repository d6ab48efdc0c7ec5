// The PPN fleet console's one script (no framework, no inline script: the page's CSP allows
// this file only). It sends the forms marked data-action as JSON with the session's CSRF
// token, asks for a typed confirmation before a delete or a forget, refreshes the parts marked
// data-live every 2 s with HTML the server rendered and escaped.
// It never puts a server's text into HTML itself: outcomes and console text go in textContent.
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const csrfMeta = document.querySelector('meta[name="csrf-token"]');
  const csrf = csrfMeta ? csrfMeta.getAttribute('content') : '';

  function showOutcome(text, ok) {
    const outcome = document.getElementById('outcome');
    if (!outcome) return;
    outcome.textContent = text;
    outcome.className = 'outcome ' + (ok ? 'ok' : 'failed');
  }

  /** The message of a JSON answer ({message}), or the status when there is none. */
  async function messageOf(response) {
    try {
      const body = await response.json();
      if (body && typeof body.message === 'string') return body.message;
      if (body && Array.isArray(body.message)) return body.message.join('; ');
    } catch (error) {
      // Not JSON: the status says enough.
    }
    return response.status + ' ' + response.statusText;
  }

  function post(url, body) {
    return fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf || '' },
      body: JSON.stringify(body),
    });
  }

  /**
   * Published ports as `ppn-fleet vm create --port` takes them ([host_port:]guest_port[/tcp|udp],
   * separated by commas or spaces) made the API's `ports`; an entry in no such form is sent as
   * it is, for the API to refuse naming it.
   */
  function portsOf(text) {
    return text
      .split(/[\s,]+/)
      .filter(function (entry) {
        return entry !== '';
      })
      .map(function (entry) {
        const parsed = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/.exec(entry);
        if (!parsed) return entry;
        const port = { guest_port: Number(parsed[2]), protocol: parsed[3] || 'tcp' };
        if (parsed[1] !== undefined) port.host_port = Number(parsed[1]);
        return port;
      });
  }

  /** A form's fields as the API's JSON: integers and booleans typed, empty optional ones left out. */
  function fieldsOf(form) {
    const body = {};
    for (const element of form.elements) {
      if (!element.name) continue;
      const type = element.getAttribute('data-type');
      if (type === 'boolean') {
        body[element.name] =
          element.type === 'checkbox' ? element.checked : element.value === 'true';
      } else if (element.value === '') continue;
      else if (type === 'integer') body[element.name] = Number(element.value);
      else if (type === 'ports') {
        const ports = portsOf(element.value);
        if (ports.length > 0) body[element.name] = ports;
      } else body[element.name] = element.value;
    }
    return body;
  }

  /** Asks for the VM's id (delete, restore) or "forget <id>" (forget) typed out; resolves to whether it was. */
  function confirmAction(kind, vmId, nodeId) {
    const dialog = document.getElementById('confirm');
    if (!dialog || typeof dialog.showModal !== 'function') return Promise.resolve(false);
    const expected = kind === 'forget' ? 'forget ' + vmId : vmId;
    document.getElementById('confirm-title').textContent =
      kind === 'forget'
        ? 'Forget VM ' + vmId + '?'
        : kind === 'restore'
          ? 'Restore VM ' + vmId + '?'
          : 'Delete VM ' + vmId + '?';
    document.getElementById('confirm-text').textContent =
      kind === 'restore'
        ? 'VM ' +
          vmId +
          ' is made again from its copy or backup: whatever it wrote after that point is lost. Unless restored as a new VM, node ' +
          nodeId +
          ' will not run it again.'
        : kind === 'forget'
          ? 'Node ' +
            nodeId +
            ' is silent: no agent can stop VM ' +
            vmId +
            '. Forgetting it only removes its record; if that machine still runs it, the VM keeps running there and comes back when its agent heartbeats again.'
          : 'VM ' +
            vmId +
            ' on node ' +
            nodeId +
            ' is stopped and its disk is destroyed. This cannot be undone.';
    document.getElementById('confirm-label').textContent = 'Type "' + expected + '" to confirm';
    const input = document.getElementById('confirm-input');
    const ok = document.getElementById('confirm-ok');
    ok.textContent =
      kind === 'forget'
        ? 'Forget ' + vmId
        : kind === 'restore'
          ? 'Restore ' + vmId
          : 'Delete ' + vmId;
    input.value = '';
    ok.disabled = true;
    input.oninput = function () {
      ok.disabled = input.value.trim() !== expected;
    };
    return new Promise(function (resolve) {
      dialog.onclose = function () {
        resolve(dialog.returnValue === 'ok' && input.value.trim() === expected);
      };
      dialog.returnValue = '';
      dialog.showModal();
      input.focus();
    });
  }

  async function submitAction(form) {
    if (leaving) return;
    const kind = form.getAttribute('data-confirm');
    if (kind) {
      const confirmed = await confirmAction(
        kind,
        form.getAttribute('data-vm'),
        form.getAttribute('data-node'),
      );
      if (!confirmed) {
        showOutcome('Nothing was done.', true);
        return;
      }
    }
    // Every action button of the VM waits for this one's answer: no second operation is sent
    // meanwhile (the buttons then refreshed are those its new state allows).
    const group = form.closest('.actions') || form;
    const buttons = Array.from(group.querySelectorAll('button[type="submit"]'));
    for (const button of buttons) button.disabled = true;
    try {
      const response = await post(form.getAttribute('data-action'), fieldsOf(form));
      const message = await messageOf(response);
      showOutcome(message, response.ok);
      if (response.status === 401 && form.id !== 'login') return leave('/login');
      if (!response.ok) return;
      const done = form.getAttribute('data-done');
      if (done === 'home') return leave('/');
      if (done === 'reload') return leave();
      if (done === 'reset') form.reset();
      if (kind === 'delete' || kind === 'forget') {
        if (location.pathname.indexOf('/vms/') === 0) return leave('/');
      }
      refresh();
    } catch (error) {
      showOutcome('The controller could not be reached: ' + error.message, false);
    } finally {
      // Leaving: the buttons stay off (a second log out would abort the first one's navigation).
      if (!leaving) for (const button of buttons) button.disabled = false;
    }
  }

  document.addEventListener('submit', function (event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute('data-action')) return;
    event.preventDefault();
    submitAction(form);
  });

  document.addEventListener('click', function (event) {
    const button = event.target;
    if (!(button instanceof HTMLButtonElement) || !button.hasAttribute('data-copy')) return;
    const text = button.getAttribute('data-copy');
    if (navigator.clipboard) {
      navigator.clipboard.writeText(text).then(
        function () {
          showOutcome('Copied: ' + text, true);
        },
        function () {
          showOutcome('Select the line and copy it: ' + text, false);
        },
      );
    }
  });

  let refreshing = false;
  let leaving = false;

  /**
   * Goes to `url` (the page again when none) and refreshes nothing more: a refresh answered
   * 401 meanwhile (after a log out) would start a second navigation that aborts this one.
   */
  function leave(url) {
    leaving = true;
    if (url === undefined) location.reload();
    else location.assign(url);
  }

  // The page shown again from the browser's back-forward cache is live again.
  window.addEventListener('pageshow', function (event) {
    if (event.persisted) leaving = false;
  });

  /** Replaces each live part with the server's fresh rendering, unless a dialog is open. */
  async function refresh() {
    const dialog = document.getElementById('confirm');
    if (leaving || refreshing || (dialog && dialog.open)) return;
    refreshing = true;
    try {
      for (const part of document.querySelectorAll('[data-live]')) {
        const response = await fetch(part.getAttribute('data-live'), {
          credentials: 'same-origin',
        });
        if (leaving) return;
        if (response.status === 401) return leave('/login');
        if (!response.ok) continue;
        const text = await response.text();
        // The HTML is the server's own rendering, every value escaped there (console.views.ts).
        if (!(dialog && dialog.open)) part.innerHTML = text;
      }
      document.body.setAttribute('data-refreshed', String(Date.now()));
    } catch (error) {
      // The next round tries again.
    } finally {
      refreshing = false;
    }
  }

  if (document.querySelector('[data-live]')) setInterval(refresh, REFRESH_MS);

  // A VM's serial console (its log followed, and typed into) is terminal.js's.
})();
