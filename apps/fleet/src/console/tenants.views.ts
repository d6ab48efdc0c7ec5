import { QUOTA_KEYS, QuotaKey } from '@app/fleet-domain';
import type { TenantStanding } from '../tenants/tenant-quotas.service';
import { Html, html, pathPart } from './html';

const HEADINGS: Record<QuotaKey, string> = {
  vms: 'VMs',
  ram_mb: 'RAM (MB)',
  vcpus: 'vCPUs',
  disk_gb: 'Disk (GiB)',
};

/** "3 / 5", or "3" when the tenant has no limit on it; marked when it is at its limit. */
function cell(use: number, limit: number | undefined): Html {
  if (limit === undefined) return html`<td>${use}</td>`;
  return html`<td class="${use >= limit ? 'warn' : ''}">${use} / ${limit}</td>`;
}

/**
 * The operator's table of tenants (VM_FLEET_TENANT_QUOTAS_FILE's), each with what it uses
 * against its quotas; nothing without tenants. Read when the page is loaded.
 */
export function tenantsSection(standings: readonly TenantStanding[]): Html | undefined {
  if (standings.length === 0) return undefined;
  return html`<section aria-labelledby="tenants-title">
    <h2 id="tenants-title">Tenants</h2>
    <p>Use against each tenant's quota (a figure alone: no limit), as of this page's load.</p>
    <table class="tenants">
      <thead>
        <tr>
          <th scope="col">Tenant</th>
          ${QUOTA_KEYS.map((key) => html`<th scope="col">${HEADINGS[key]}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${standings.map(
          ({ tenant_id, quota, use }) =>
            html`<tr>
              <th scope="row"><a href="/?tenant=${pathPart(tenant_id)}">${tenant_id}</a></th>
              ${QUOTA_KEYS.map((key) => cell(use[key], quota[key]))}
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}
