import {
  IllegalVmTransitionError,
  VM_TRANSITIONS,
  VmMoveOperation,
  VmPhase,
  mayMove,
  nextPhase,
} from './vm-transitions';

const OPERATIONS: VmMoveOperation[] = [
  'admit',
  'provision',
  'start',
  'stop',
  'restart',
  'crash',
  'reconcile',
  'delete',
  'fence',
  'unfence',
  'settle',
];

describe('the VM life cycle table', () => {
  it('walks a create, a restart by the policy, an operator restart and a delete', () => {
    const path: Array<[VmMoveOperation, VmPhase]> = [
      ['admit', VmPhase.Admitting],
      ['provision', VmPhase.Provisioning],
      ['settle', VmPhase.Idle],
      ['crash', VmPhase.Idle],
      ['start', VmPhase.Starting],
      ['settle', VmPhase.Idle],
      ['restart', VmPhase.Restarting],
      ['start', VmPhase.Starting],
      ['settle', VmPhase.Idle],
      ['delete', VmPhase.Deleting],
      ['settle', VmPhase.Idle],
    ];
    let phase = VmPhase.Idle;
    for (const [operation, expected] of path) {
      phase = nextPhase('vm-1', phase, operation);
      expect(phase).toBe(expected);
    }
  });

  it('refuses an operator action on a VM with work under way, naming the VM, the phase and the operation', () => {
    expect(() => nextPhase('vm-7', VmPhase.Provisioning, 'stop')).toThrow(
      new IllegalVmTransitionError('vm-7', VmPhase.Provisioning, 'stop'),
    );
    expect(() => nextPhase('vm-7', VmPhase.Stopping, 'restart')).toThrow(
      'vm vm-7: cannot restart while stopping',
    );
    for (const phase of [VmPhase.Starting, VmPhase.Stopping, VmPhase.Restarting]) {
      for (const operation of ['stop', 'restart', 'crash', 'reconcile', 'admit'] as const) {
        expect(mayMove(phase, operation)).toBe(false);
      }
    }
  });

  it('lets a delete take a VM from any phase but another delete, and a start asked meanwhile wait for it', () => {
    for (const phase of Object.values(VmPhase)) {
      expect(mayMove(phase, 'delete')).toBe(phase !== VmPhase.Deleting);
    }
    expect(nextPhase('vm-1', VmPhase.Deleting, 'start')).toBe(VmPhase.Deleting);
  });

  it('settles every phase but idle and fenced, back to idle; reconciliation and crashes move idle VMs alone', () => {
    for (const phase of Object.values(VmPhase)) {
      const settles = phase !== VmPhase.Idle && phase !== VmPhase.Fenced;
      expect(mayMove(phase, 'settle')).toBe(settles);
      if (settles) expect(nextPhase('vm-1', phase, 'settle')).toBe(VmPhase.Idle);
      expect(mayMove(phase, 'reconcile')).toBe(phase === VmPhase.Idle);
      expect(mayMove(phase, 'crash')).toBe(phase === VmPhase.Idle);
    }
  });

  it('fences idle VMs alone, and holds a fenced VM until unfenced or deleted', () => {
    for (const phase of Object.values(VmPhase)) {
      expect(mayMove(phase, 'fence')).toBe(phase === VmPhase.Idle);
    }
    expect(nextPhase('vm-1', VmPhase.Idle, 'fence')).toBe(VmPhase.Fenced);
    for (const operation of ['start', 'stop', 'restart', 'reconcile', 'crash', 'settle'] as const) {
      expect(() => nextPhase('vm-1', VmPhase.Fenced, operation)).toThrow(
        `vm vm-1: cannot ${operation} while fenced`,
      );
    }
    expect(nextPhase('vm-1', VmPhase.Fenced, 'unfence')).toBe(VmPhase.Idle);
    expect(nextPhase('vm-1', VmPhase.Fenced, 'delete')).toBe(VmPhase.Deleting);
  });

  it('has a row for every phase and names only known operations', () => {
    expect(Object.keys(VM_TRANSITIONS).sort()).toEqual(Object.values(VmPhase).sort());
    for (const row of Object.values(VM_TRANSITIONS)) {
      for (const operation of Object.keys(row)) expect(OPERATIONS).toContain(operation);
    }
  });
});
