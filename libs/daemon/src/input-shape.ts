import { ClassConstructor, plainToInstance } from 'class-transformer';
import { ValidationTypes, getMetadataStorage } from 'class-validator';

/** One field a wire class declares, as far as its shape goes. */
export interface FieldShape {
  name: string;
  /** The class of the objects the field holds (its @Type), if it holds objects. */
  nested?: ClassConstructor<object>;
  isArray: boolean;
  /** Its @ArrayMaxSize. */
  maxItems?: number;
  /** Whether it has a @Transform of its own (which must see the whole value at once). */
  transformed: boolean;
}

const shapes = new WeakMap<ClassConstructor<object>, FieldShape[]>();

/**
 * Values a @Transform shows itself on: one that defaults an absent value, trims, converts or
 * drops an empty string changes one of them (or the absent probe). One that changes none is
 * not seen; `transformed` only decides whether a list of objects is shaped item by item.
 */
const PROBE_TEXTS = [' \u0000probe ', ''];

/** What plainToInstance makes of a probe; undefined when a @Transform throws on it. */
function probe(
  wireClass: ClassConstructor<object>,
  value: Record<string, unknown>,
): Record<string, unknown> | undefined {
  try {
    return plainToInstance(wireClass, value) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * The fields of a wire class: those with a validation rule, the only ones validation keeps.
 * Read from the decorators once per class.
 */
export function fieldsOf(wireClass: ClassConstructor<object>): FieldShape[] {
  const known = shapes.get(wireClass);
  if (known) return known;
  const byName = new Map<string, FieldShape>();
  const nestedRules = new Set<string>();
  for (const rule of getMetadataStorage().getTargetValidationMetadatas(
    wireClass,
    '',
    false,
    false,
  )) {
    const field = byName.get(rule.propertyName) ?? {
      name: rule.propertyName,
      isArray: false,
      transformed: false,
    };
    byName.set(rule.propertyName, field);
    if (rule.name === 'isArray') field.isArray = true;
    if (rule.type === ValidationTypes.NESTED_VALIDATION) nestedRules.add(rule.propertyName);
    if (rule.name === 'arrayMaxSize') field.maxItems = Number(rule.constraints[0]);
  }
  // What @Type() and @Transform() declare is read through class-transformer's public API, by
  // what plainToInstance makes of probes (its metadata storage is exported by no public path).
  const absent = probe(wireClass, {});
  for (const field of byName.values()) {
    field.transformed =
      absent?.[field.name] !== undefined ||
      PROBE_TEXTS.some((text) => probe(wireClass, { [field.name]: text })?.[field.name] !== text);
    if (!nestedRules.has(field.name)) continue;
    const made = probe(wireClass, { [field.name]: field.isArray ? [{}] : {} })?.[field.name];
    const item: unknown = Array.isArray(made) ? made[0] : made;
    const type = typeof item === 'object' && item !== null ? item.constructor : undefined;
    if (type && type !== Object) field.nested = type as ClassConstructor<object>;
  }
  const fields = [...byName.values()];
  shapes.set(wireClass, fields);
  return fields;
}

export interface ShapedInput {
  /** Only the declared fields, each no bigger than its class allows: cheap to transform. */
  value: Record<string, unknown>;
  /** What is wrong with the input's shape, one message per field, each naming it. */
  problems: string[];
  /**
   * With `deferLists`, the top-level lists of objects, taken out of `value` (left as []) and
   * not yet shaped: their items are shaped one by one with shapeListItem.
   */
  lists: Array<{ field: FieldShape; items: unknown[] }>;
}

/** A list of objects whose items can be shaped, transformed and validated one at a time. */
export function isListOfObjects(field: FieldShape): boolean {
  return field.nested !== undefined && field.isArray && !field.transformed;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A value of the wrong kind where a string, number or boolean belongs: validation refuses it
 * by its kind alone, so an empty one stands in for it and class-transformer never walks it
 * (however deep or long it was).
 */
function standIn(value: object): object {
  return Array.isArray(value) ? [] : {};
}

/** With `deferred`, lists of objects within their size go there, unshaped, and stay [] here. */
function shapeObject(
  wireClass: ClassConstructor<object>,
  input: Record<string, unknown>,
  path: string,
  problems: string[],
  deferred?: ShapedInput['lists'],
): Record<string, unknown> {
  const shaped: Record<string, unknown> = {};
  for (const field of fieldsOf(wireClass)) {
    if (!Object.prototype.hasOwnProperty.call(input, field.name)) continue;
    const value = input[field.name];
    const at = path ? `${path}.${field.name}` : field.name;
    if (
      deferred &&
      isListOfObjects(field) &&
      Array.isArray(value) &&
      value.length <= (field.maxItems ?? Infinity)
    ) {
      deferred.push({ field, items: value });
      shaped[field.name] = [];
    } else {
      shaped[field.name] = shapeField(field, value, at, problems);
    }
  }
  return shaped;
}

function shapeField(field: FieldShape, value: unknown, at: string, problems: string[]): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (!Array.isArray(value)) {
    if (!field.nested || field.isArray) return standIn(value);
    return shapeObject(field.nested, value as Record<string, unknown>, at, problems);
  }
  if (!field.isArray) return standIn(value);
  if (field.maxItems !== undefined && value.length > field.maxItems) {
    problems.push(`${at} must contain no more than ${field.maxItems} elements`);
    return [];
  }
  if (!field.nested) {
    return value.map((item: unknown) =>
      typeof item === 'object' && item !== null ? standIn(item) : item,
    );
  }
  const nested = field.nested;
  return value.map((item: unknown, index) =>
    shapeListItem(nested, item, `${at}.${index}`, problems),
  );
}

/** One item of a list of objects, cut to its class's declared shape. */
export function shapeListItem(
  itemClass: ClassConstructor<object>,
  item: unknown,
  at: string,
  problems: string[],
): Record<string, unknown> {
  if (isPlainObject(item)) return shapeObject(itemClass, item, at, problems);
  problems.push(`${at} must be an object`);
  return {};
}

/**
 * Cuts an input down to the fields `wireClass` declares, before class-transformer and
 * class-validator see it: unknown fields are dropped unread (however deep or many), a field's
 * array longer than its @ArrayMaxSize is refused at once, and a string, number or boolean field
 * holding an array or object gets an empty stand-in. A query field given as `name[]=` or
 * `name[key]=` is refused by name. What is left costs validation little. With `deferLists`, the
 * items of top-level lists of objects are left for the caller to shape one at a time.
 */
export function shapeInput(
  wireClass: ClassConstructor<object>,
  input: unknown,
  source: 'body' | 'query' | 'path',
  deferLists = false,
): ShapedInput {
  const shaped: ShapedInput = { value: {}, problems: [], lists: [] };
  if (input === undefined || input === null) return shaped;
  if (!isPlainObject(input)) {
    const what = source === 'body' ? 'the request body' : `the ${source}`;
    shaped.problems.push(`${what} must be a JSON object`);
    return shaped;
  }
  if (source === 'query') {
    const names = new Set(fieldsOf(wireClass).map((field) => field.name));
    for (const key of Object.keys(input)) {
      const bracket = key.indexOf('[');
      const name = key.slice(0, bracket);
      if (bracket > 0 && names.has(name)) {
        shaped.problems.push(
          `${name} must be given once, as ?${name}=value, not as an array or object`,
        );
      }
    }
  }
  shaped.value = shapeObject(
    wireClass,
    input,
    '',
    shaped.problems,
    deferLists ? shaped.lists : undefined,
  );
  return shaped;
}
