import { tenantsSection } from './tenants.views';

describe('tenantsSection', () => {
  it('is nothing without tenants', () => {
    expect(tenantsSection([])).toBeUndefined();
  });

  it("shows each tenant's use against its limits, a figure alone where it has none, escaped", () => {
    const hostile = '<img src=x onerror=alert(1)>';
    const text = tenantsSection([
      {
        tenant_id: 'acme',
        quota: { vms: 2, ram_mb: 8192 },
        use: { vms: 2, ram_mb: 1024, vcpus: 3, disk_gb: 0 },
      },
      { tenant_id: hostile, quota: {}, use: { vms: 0, ram_mb: 0, vcpus: 0, disk_gb: 0 } },
    ])!.text;
    expect(text).toContain('<td class="warn">2 / 2</td>');
    expect(text).toContain('<td class="">1024 / 8192</td>');
    expect(text).toContain('<td>3</td>');
    expect(text).not.toContain('<img');
    expect(text).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});
