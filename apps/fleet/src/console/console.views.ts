import { FleetVmWithLifeCycle, HeartbeatDiskRoom } from '@app/fleet-domain';
import { Html, html } from './html';

/** The VMs table's filters, from the page's query. */
export interface ConsoleFilters {
  tenant?: string;
  node?: string;
}

/** A stored node as the console shows it. */
export interface ConsoleNode {
  node_id: string;
  hostname: string;
  wg_ip: string;
  ram_total_mb: number;
  ram_used_mb: number;
  /** What placement counts as free now (RAM held for VMs being created taken off). */
  ram_available_mb: number;
  kvm_available: boolean;
  reserved: boolean;
  vm_count: number;
  /** Its last heartbeat's disk room; null when its agent reports none. */
  disk_room: HeartbeatDiskRoom | null;
  heartbeat_age_s: number;
  last_heartbeat: string;
  /** Heard from within 30 s; not live: kept, silent, for the VMs it last listed. */
  live: boolean;
  /** Live, but it has missed two heartbeats in a row. */
  late: boolean;
  /** Why placement passes it over for any VM; null when it does not. */
  passed_over: string | null;
  vm_ids: string[];
  /** Since when it is drained (`node drain`); null or absent: it is not. */
  drained_since?: string | null;
  /** etcd mode: the protected VMs its last heartbeat said it fenced (its lease ran out). */
  fenced_vm_ids: string[];
}

export interface ConsoleOverview {
  version: string;
  /** VM_FLEET_API_TOKEN is not set: anyone who reaches the listener may act. */
  open: boolean;
  taken_at: string;
  nodes: ConsoleNode[];
  /** The VMs the filters let through. */
  vms: FleetVmWithLifeCycle[];
  /** Every tenant of a listed VM, for the filter. */
  tenants: string[];
  filters: ConsoleFilters;
}

/** What every page of a session carries. */
export interface PageContext {
  /** The session's CSRF token, sent back in X-CSRF-Token by the page's script. */
  csrf: string;
  open: boolean;
  version: string;
  /** A tenant's session: the tenant, named in the header. */
  tenant?: string;
}

/** The user a VM's ssh line logs in as (the guest image's). */
export const SSH_USER = 'debian';

const STYLESHEET = '/console/assets/console.css';
const SCRIPT = '/console/assets/console.js';

function documentOf(title: string, body: Html, csrf?: string): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${csrf === undefined ? '' : html`<meta name="csrf-token" content="${csrf}" />`}
        <title>${title} · PPN fleet</title>
        <link rel="stylesheet" href="${STYLESHEET}" />
        <script src="${SCRIPT}" defer></script>
      </head>
      <body>
        ${body}
      </body>
    </html> `;
}

/** A page of a session: the header, the open-API banner, the outcome line, then `content`. */
export function page(title: string, context: PageContext, content: Html): Html {
  return documentOf(
    title,
    html`<header class="bar">
        <a class="brand" href="/">PPN fleet</a>
        <nav aria-label="Console"><a href="/">Overview</a> <a href="/docs">API docs</a></nav>
        <span class="version">controller ${context.version}</span>
        ${context.tenant === undefined ? '' : html`<span class="tenant">tenant ${context.tenant}</span>`}
        ${
          context.open
            ? ''
            : html`<form class="logout" data-action="/logout" data-done="reload">
                <button type="submit">Log out</button>
              </form>`
        }
      </header>
      ${
        context.open
          ? html`<p class="banner" role="alert">
              <strong>The API is open.</strong> VM_FLEET_API_TOKEN is not set: anyone who can reach
              this listener can create, stop and delete VMs. Set it on the controller to require a
              login.
            </p>`
          : ''
      }
      <p id="outcome" class="outcome" role="status" aria-live="polite"></p>
      <main id="main">${content}</main>
      ${confirmDialog()}`,
    context.csrf,
  );
}

/** The login page (VM_FLEET_API_TOKEN set, no session). */
export function loginPage(version: string): Html {
  return documentOf(
    'Log in',
    html`<main id="main" class="login">
      <h1>PPN fleet</h1>
      <form id="login" data-action="/login" data-done="home">
        <label for="token">API token (VM_FLEET_API_TOKEN)</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="current-password"
          required
          maxlength="512"
        />
        <button type="submit">Log in</button>
      </form>
      <p id="outcome" class="outcome" role="status" aria-live="polite"></p>
      <p class="version">controller ${version}</p>
    </main>`,
  );
}

/** The dialog the page's script fills in to confirm a delete or a forget. */
function confirmDialog(): Html {
  return html`<dialog id="confirm" aria-labelledby="confirm-title">
    <form method="dialog">
      <h2 id="confirm-title">Confirm</h2>
      <p id="confirm-text"></p>
      <label for="confirm-input" id="confirm-label"></label>
      <input id="confirm-input" autocomplete="off" spellcheck="false" />
      <div class="buttons">
        <button value="cancel" type="submit">Cancel</button>
        <button id="confirm-ok" value="ok" type="submit" class="danger">Confirm</button>
      </div>
    </form>
  </dialog>`;
}

/** The page for a VM or node id that nothing lists. */
export function notFoundPage(what: string, context: PageContext): Html {
  return page(
    'Not found',
    context,
    html`<h1>Not found</h1>
      <p>${what}</p>
      <p><a href="/">Back to the overview</a></p>`,
  );
}
