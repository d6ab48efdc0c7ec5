import { getMetadataStorage } from 'class-validator';

type Storage = ReturnType<typeof getMetadataStorage>;
type ValidationMetadata = ReturnType<Storage['getTargetValidationMetadatas']>[number];
type Grouped = Record<string, ValidationMetadata[]>;

let installed = false;

/**
 * class-validator looks up a class's rules anew for every object it validates (a heartbeat,
 * each of its VMs, each port): a walk over the rules of every validated class the process has
 * loaded (to find the parents), then a grouping by field. The controller loads a few hundred
 * such classes, and a heartbeat validates a dozen objects: the walk was a tenth of its CPU.
 * The rules only change when a class is declared, so the answers are kept per class and
 * options until the next declaration (without groups, which the daemons never validate with);
 * they are only read, never changed, by class-validator. What is valid is unchanged.
 */
export function memoizeValidationMetadata(storage: Storage = getMetadataStorage()): void {
  if (installed) return;
  installed = true;
  let found = new Map<unknown, Map<string, ValidationMetadata[]>>();
  let grouped = new WeakMap<ValidationMetadata[], Grouped>();
  const forget = (): void => {
    found = new Map();
    grouped = new WeakMap();
  };
  const addValidationMetadata = storage.addValidationMetadata.bind(storage);
  storage.addValidationMetadata = (metadata: ValidationMetadata): void => {
    forget();
    addValidationMetadata(metadata);
  };
  const lookUp = storage.getTargetValidationMetadatas.bind(storage);
  storage.getTargetValidationMetadatas = (
    target: Function, // eslint-disable-line @typescript-eslint/no-unsafe-function-type
    schema: string,
    always: boolean,
    strictGroups: boolean,
    groups?: string[],
  ): ValidationMetadata[] => {
    if (groups !== undefined && groups.length > 0) {
      return lookUp(target, schema, always, strictGroups, groups);
    }
    const key = `${schema}\u0000${always}\u0000${strictGroups}`;
    let byOptions = found.get(target);
    if (byOptions === undefined) {
      byOptions = new Map<string, ValidationMetadata[]>();
      found.set(target, byOptions);
    }
    let rules = byOptions.get(key);
    if (rules === undefined) {
      rules = lookUp(target, schema, always, strictGroups);
      byOptions.set(key, rules);
    }
    return rules;
  };
  const groupByPropertyName = storage.groupByPropertyName.bind(storage);
  storage.groupByPropertyName = (metadata: ValidationMetadata[]): Grouped => {
    let byField = grouped.get(metadata);
    if (byField === undefined) {
      byField = groupByPropertyName(metadata);
      grouped.set(metadata, byField);
    }
    return byField;
  };
}
