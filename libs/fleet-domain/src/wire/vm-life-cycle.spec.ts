import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { VmConsole, VmLifeCycle } from './vm-life-cycle';

function problems<T extends object>(wireClass: ClassConstructor<T>, value: object): string[] {
  return validateSync(plainToInstance(wireClass, value)).map(({ property }) => property);
}

const read = { vm_id: 'vm-0123456789abcdef', from: 0, next: 12, reset: false };

describe("a node's console answer", () => {
  it('takes printable text with tabs and newlines', () => {
    expect(problems(VmConsole, { ...read, text: 'login:\tok\n é\n' })).toEqual([]);
  });

  it.each([
    ['a terminal escape', '\x1b[2J'],
    ['a carriage return', 'a\rb'],
    ['a bidi override', 'abc\u202edef'],
    ['a line separator', 'a\u2028b'],
  ])('refuses %s, so nothing reaches a terminal through the controller', (_, text) => {
    expect(problems(VmConsole, { ...read, text })).toEqual(['text']);
  });
});

describe("a node's life cycle answer", () => {
  const life = {
    vm_id: 'vm-0123456789abcdef',
    state: 'Stopped',
    desired_state: 'running',
    operation: null,
    restart_count: 2,
    last_exit: 'its process ended',
    reason: null,
    next_start_at: '2026-08-06T12:00:05.000Z',
  };

  it('is taken as the agent sends it', () => {
    expect(problems(VmLifeCycle, life)).toEqual([]);
  });

  it('refuses a reason with a control character, a negative count, an unknown desired state', () => {
    expect(problems(VmLifeCycle, { ...life, reason: 'a\nb' })).toEqual(['reason']);
    expect(problems(VmLifeCycle, { ...life, restart_count: -1 })).toEqual(['restart_count']);
    expect(problems(VmLifeCycle, { ...life, desired_state: 'paused' })).toEqual(['desired_state']);
  });
});
