import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { HeartbeatAnswer, NodeHeartbeat } from './node-heartbeat';

function messages(errors: ReturnType<typeof validateSync>): string[] {
  return errors.flatMap((error) => Object.values(error.constraints ?? {}));
}

function heartbeatProblems(fenced: unknown): string[] {
  const heartbeat = plainToInstance(NodeHeartbeat, {
    node_id: 'node-a',
    wg_ip: '10.0.0.2',
    hostname: 'node-a',
    ram_total_mb: 1024,
    ram_used_mb: 0,
    cpu_cores: 1,
    cpu_load_pct: 0,
    kvm_available: false,
    vms: [],
    boot_id: 'boot-1',
    timestamp_utc: '2026-08-06T12:00:00Z',
    fenced_vm_ids: fenced,
  });
  return messages(validateSync(heartbeat));
}

describe('fencing wire fields', () => {
  it('takes a heartbeat without fenced_vm_ids, or listing VM ids', () => {
    expect(heartbeatProblems(undefined)).toEqual([]);
    expect(heartbeatProblems(['vm-1', 'vm-2'])).toEqual([]);
  });

  it('refuses a fenced_vm_ids entry that is no id, or too many of them, naming the field', () => {
    expect(heartbeatProblems(['../etc'])).toEqual([
      expect.stringContaining('each value in fenced_vm_ids must be 1-128 characters'),
    ]);
    expect(heartbeatProblems('vm-1')).toEqual(
      expect.arrayContaining([expect.stringContaining('fenced_vm_ids')]),
    );
    const many = Array.from({ length: 1025 }, (_, i) => `vm-${i}`);
    expect(heartbeatProblems(many)).toEqual([expect.stringContaining('fenced_vm_ids')]);
  });

  it('bounds fence_after_s to 10..600 whole seconds', () => {
    const problems = (value: unknown) =>
      messages(
        validateSync(plainToInstance(HeartbeatAnswer, { accepted: true, fence_after_s: value })),
      );
    expect(problems(45)).toEqual([]);
    expect(problems(9)).not.toEqual([]);
    expect(problems(601)).not.toEqual([]);
    expect(problems(10.5)).not.toEqual([]);
  });
});
