import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  MAX_HOST_CPU_CORES,
  MAX_HOST_RAM_MB,
  MAX_VM_RAM_MB,
  MAX_VM_VCPUS,
} from '@app/fleet-domain';

const API_PAGE = join(__dirname, '..', '..', 'docs', 'api.md');

/** A number as the docs write it: 1,048,576. */
function written(value: number): string {
  return value.toLocaleString('en-US');
}

describe('the limits docs/api.md states', () => {
  const text = readFileSync(API_PAGE, 'utf8').replace(/\s+/g, ' ');

  it("are a create's, as the API enforces them", () => {
    expect(text).toContain(`a create's \`ram_mb\` is 1 to ${written(MAX_VM_RAM_MB)} MB`);
    expect(text).toContain(`its \`vcpu_count\` 1 to ${written(MAX_VM_VCPUS)};`);
  });

  it("are a heartbeat's, as the API enforces them", () => {
    expect(MAX_HOST_RAM_MB).toBe(2 ** 31 - 1);
    expect(text).toContain('are below 2^31 MB');
    expect(text).toContain(`below ${written(MAX_HOST_CPU_CORES + 1)}`);
  });
});
