import {
  MAX_COPY_EVERY_S,
  MAX_VM_COPIES,
  MIN_COPY_EVERY_S,
  VmCopies,
  ageText,
  sizeText,
} from '@app/fleet-domain';
import { Html, html, pathPart } from './html';

function policyText(policy: VmCopies['policy']): string {
  if (policy === null) return 'not reported by its agent';
  if (policy.count === 0) return 'none: this VM is not copied to another node';
  return `${policy.count} ${policy.count === 1 ? 'copy' : 'copies'} on other nodes, every ${policy.every_s} s`;
}

function timeCell(time: string, nowMs: number): Html {
  return html`<time datetime="${time}">${time}</time> (${ageText(time, nowMs)} ago)`;
}

function copiesTable(copies: VmCopies, nowMs: number): Html {
  if (copies.copies.length === 0) {
    return html`<p class="empty">No copy on another node.</p>`;
  }
  return html`<div class="table-wrap">
    <table class="vms copies">
      <thead>
        <tr>
          <th scope="col">Node</th>
          <th scope="col">Taken</th>
          <th scope="col">Size</th>
          <th scope="col">Sent by</th>
        </tr>
      </thead>
      <tbody>
        ${copies.copies.map(
          (copy) =>
            html`<tr>
              <th scope="row" data-label="Node">
                <a href="/nodes/${pathPart(copy.node_id)}">${copy.node_id}</a>
              </th>
              <td data-label="Taken">${timeCell(copy.copied_at, nowMs)}</td>
              <td data-label="Size">${sizeText(copy.size_bytes)}</td>
              <td data-label="Sent by">
                ${copy.source_node_id}${
                  copy.source_node_id === copies.node_id
                    ? ''
                    : html` <span class="badge" title="sent when the VM ran there"
                        >not its node now</span
                      >`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function backupsPart(copies: VmCopies, nowMs: number): Html {
  const backups = copies.backups;
  if (backups === null) {
    return html`<p class="reason">
      Backups not read: ${copies.backups_unread ?? 'no reason given'}.
    </p>`;
  }
  return html`${
    backups.backups.length === 0
      ? html`<p class="empty">No backup in node ${copies.node_id}'s VM_BACKUP_DIR.</p>`
      : html`<div class="table-wrap">
          <table class="vms backups">
            <thead>
              <tr>
                <th scope="col">Backup</th>
                <th scope="col">Kind</th>
                <th scope="col">Taken</th>
                <th scope="col">Size</th>
                <th scope="col">File on ${copies.node_id}</th>
              </tr>
            </thead>
            <tbody>
              ${backups.backups.map(
                (backup) =>
                  html`<tr>
                    <th scope="row" data-label="Backup">${backup.backup_id}</th>
                    <td data-label="Kind">${backup.kind}</td>
                    <td data-label="Taken">${timeCell(backup.taken_at, nowMs)}</td>
                    <td data-label="Size">${sizeText(backup.size_bytes)}</td>
                    <td data-label="File"><code>${backup.path}</code></td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </div>`
  }${
    backups.in_progress_since === null
      ? ''
      : html`<p class="hint">
          A backup is under way since ${timeCell(backups.in_progress_since, nowMs)}.
        </p>`
  }${
    backups.last_error === null
      ? ''
      : html`<p class="reason">The last backup failed: ${backups.last_error}</p>`
  }`;
}

/** etcd mode: a VM the leader recovered on another node, with its generation; nothing otherwise. */
function recoveredPart(copies: VmCopies): Html | string {
  const generation = copies.generation;
  if (generation === undefined) return '';
  return html`<dt>Recovered</dt>
    <dd class="recovered">
      <span class="badge warn">generation ${generation}</span> recovered from its copies on another
      node ${generation === 1 ? 'once' : `${generation} times`} after its node was lost (the
      leader's log names each); a node that ran an older generation never starts it again
    </dd>`;
}

/** The refreshed part of a VM page's "Copies and backups": its policy, copies and backups. */
export function vmCopiesLive(copies: VmCopies, nowMs: number): Html {
  return html`<dl class="facts">
      <dt>Copy policy</dt>
      <dd>${policyText(copies.policy)}</dd>
      <dt>Freshest copy</dt>
      <dd>
        ${
          copies.copied_at === null || copies.copy_node_id === null
            ? 'none on another live node'
            : html`on <a href="/nodes/${pathPart(copies.copy_node_id)}">${copies.copy_node_id}</a>,
                ${timeCell(copies.copied_at, nowMs)}`
        }
      </dd>
      ${recoveredPart(copies)}
    </dl>
    <h3>Copies on other nodes</h3>
    ${copiesTable(copies, nowMs)}
    <h3>Backups</h3>
    ${backupsPart(copies, nowMs)}`;
}

/**
 * A VM page's "Copies and backups" section, refreshed by the page's script like the VM's facts;
 * `copies` undefined: not read yet (the first refresh fills it).
 */
export function vmCopiesSection(vmId: string, copies: VmCopies | undefined, nowMs: number): Html {
  return html`<section aria-labelledby="copies-title">
    <h2 id="copies-title">Copies and backups</h2>
    <div id="copies" data-live="/console/fragments/vms/${pathPart(vmId)}/copies">
      ${copies === undefined ? html`<p class="hint">Reading…</p>` : vmCopiesLive(copies, nowMs)}
    </div>
  </section>`;
}

/** The create form's copy fields: how many copies (the fleet's default when left empty), how often. */
export function createCopiesFields(): Html {
  return html`<label for="copies_count">Copies on other nodes</label>
    <select id="copies_count" name="copies_count" data-type="integer">
      <option value="">fleet default</option>
      ${Array.from({ length: MAX_VM_COPIES + 1 }, (_, count) => html`<option value="${count}">${count}</option>`)}
    </select>
    <label for="copies_every_s">Copy every (s)</label>
    <input
      id="copies_every_s"
      name="copies_every_s"
      type="number"
      data-type="integer"
      min="${MIN_COPY_EVERY_S}"
      max="${MAX_COPY_EVERY_S}"
      step="1"
      placeholder="60"
    />`;
}
