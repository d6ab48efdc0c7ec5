import 'reflect-metadata';
import { isDeepStrictEqual } from 'node:util';
import { plainToInstance } from 'class-transformer';
import { ValidatorOptions, getMetadataStorage, validateSync } from 'class-validator';
import { describeValidationErrors, validateInput } from '@app/daemon';
import * as domain from '@app/fleet-domain';
import { heartbeat, vmRecord } from '../../../../test/factories/heartbeat.factory';

/**
 * The validation memo (libs/daemon/src/validation-metadata-memo.ts) only keeps what
 * class-validator would look up again: every wire class judges every input the same with it as
 * without it, messages and all.
 */
const storage = getMetadataStorage() as unknown as Record<string, unknown> & {
  validationMetadatas: Map<unknown, Array<{ propertyName: string }>>;
};
const MEMOIZED = ['getTargetValidationMetadatas', 'groupByPropertyName'] as const;

/** What `judge` gives with the memo, then with class-validator's own look-ups. */
async function withAndWithout<T>(judge: () => T | Promise<T>): Promise<[T, T]> {
  for (const name of MEMOIZED) expect(Object.hasOwn(storage, name)).toBe(true);
  const memoized = await judge();
  const kept = MEMOIZED.map((name) => storage[name]);
  try {
    for (const name of MEMOIZED) delete storage[name];
    return [memoized, await judge()];
  } finally {
    MEMOIZED.forEach((name, index) => (storage[name] = kept[index]));
  }
}

const AN_OBJECT = {};
const OBJECTS = [{}];
const BAD_VALUES: unknown[] = [
  undefined,
  null,
  '',
  'x',
  'a'.repeat(300),
  -1,
  1.5,
  70000,
  true,
  [],
  AN_OBJECT,
  OBJECTS,
];

/**
 * Inputs also judged under every option set: nothing, a scalar, an object and objects in an
 * array reach every rule look-up the options key (nested classes too); the other bad values only
 * fail other rules of the same look-ups.
 */
const SHAPES = new Set<unknown>([undefined, 'x', 1, AN_OBJECT, OBJECTS]);
const judgedUnderOptions = (input: Record<string, unknown>): boolean =>
  Object.values(input).every((value) => SHAPES.has(value));

/** The wire's classes (every class of the domain lib that has rules). */
const wireClasses = Object.entries(domain).filter(
  (entry): entry is [string, new () => object] =>
    typeof entry[1] === 'function' && storage.validationMetadatas.has(entry[1]),
);

/** `{}`, an unknown field, then each declared field given each bad value. */
function inputsFor(wireClass: new () => object): Record<string, unknown>[] {
  const fields = new Set<string>();
  for (const [target, rules] of storage.validationMetadatas) {
    if (
      target === wireClass ||
      (target instanceof Function && wireClass.prototype instanceof target)
    ) {
      for (const { propertyName } of rules) fields.add(propertyName);
    }
  }
  const inputs: Record<string, unknown>[] = [{}, { not_a_field: 1 }];
  for (const field of fields) for (const value of BAD_VALUES) inputs.push({ [field]: value });
  return inputs;
}

const OPTION_SETS: ValidatorOptions[] = [
  { whitelist: true, forbidUnknownValues: true, stopAtFirstError: true },
  { forbidUnknownValues: false },
  { groups: ['some-group'] },
  { always: true, strictGroups: true },
];

async function problems(wireClass: new () => object, input: unknown): Promise<unknown> {
  try {
    return (await validateInput(wireClass, input, 'body')).problems;
  } catch (error) {
    return `threw ${String(error)}`;
  }
}

describe('validation memo', () => {
  it('finds the wire classes', () => {
    expect(wireClasses.map(([name]) => name)).toEqual(
      expect.arrayContaining(['NodeHeartbeat', 'HeartbeatVm', 'CreateVmRequest', 'CopyPolicy']),
    );
  });

  it('judges every wire class the same with it as without it, for each bad field', async () => {
    const cases = wireClasses.flatMap(([name, wireClass]) =>
      inputsFor(wireClass).map((input) => ({ name, wireClass, input })),
    );
    // Every case judged with the memo, then every case without it: the memo is taken out once.
    const judgeAll = async (): Promise<unknown[]> => {
      const answers: unknown[] = [];
      for (const { wireClass, input } of cases) {
        answers.push({
          problems: await problems(wireClass, input),
          byOptions: judgedUnderOptions(input)
            ? OPTION_SETS.map((options) =>
                describeValidationErrors(validateSync(plainToInstance(wireClass, input), options)),
              )
            : [],
        });
      }
      return answers;
    };
    const [withMemo, withoutMemo] = await withAndWithout(judgeAll);
    // Each case judged differently, with both answers: the failure shows what the memo changed.
    const different = cases.flatMap(({ name, input }, index) =>
      isDeepStrictEqual(withMemo[index], withoutMemo[index])
        ? []
        : [{ name, input, withMemo: withMemo[index], withoutMemo: withoutMemo[index] }],
    );
    expect(different).toEqual([]);
    expect(cases.length).toBeGreaterThan(500);
  });

  const good = heartbeat({ node_id: 'n1', ram_used_mb: 1 });
  it.each<[string, Record<string, unknown>]>([
    ['a good heartbeat', {}],
    ['node_id', { node_id: '-leading-dash' }],
    ['ram_total_mb', { ram_total_mb: '16384' }],
    ['cpu_load_pct', { cpu_load_pct: 100.5 }],
    ['reserved', { reserved: 'false' }],
    ['vms', { vms: {} }],
    ['vms.0.state', { vms: [vmRecord('vm-1', { state: 'Exploded' as never })] }],
    ['vms.0.vm_id', { vms: [vmRecord('../etc')] }],
    [
      'vms.1.host_ports.0.host_port',
      {
        vms: [
          vmRecord('a'),
          vmRecord('b', { host_ports: [{ host_port: 0, guest_port: 22, protocol: 'tcp' }] }),
        ],
      },
    ],
    ['vms.0.copies', { vms: [{ ...vmRecord('a'), copies: { count: 3, every_s: 1 } }] }],
    ['replicas', { replicas: [{ vm_id: 'a' }] }],
    ['an unknown field', { gpu_count: 2, labels: { zone: 'a' } }],
    ['timestamp_utc', { timestamp_utc: '2026-08-06T12:00:00' }],
  ])('judges a heartbeat with %s the same, what it keeps too', async (_case, change) => {
    const [memoized, own] = await withAndWithout(async () => {
      const { instance, problems: found } = await validateInput(
        domain.NodeHeartbeat,
        { ...good, ...change },
        'body',
      );
      return { problems: found, kept: JSON.stringify(instance) };
    });
    expect(memoized).toEqual(own);
  });
});
