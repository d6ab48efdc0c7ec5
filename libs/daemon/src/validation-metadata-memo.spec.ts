import 'reflect-metadata';
import { IsInt, IsOptional, IsString, validateSync } from 'class-validator';
import { memoizeValidationMetadata } from './validation-metadata-memo';

memoizeValidationMetadata();

class Base {
  @IsInt()
  count!: unknown;
}

function failing(value: object): string[] {
  return validateSync(value, { forbidUnknownValues: true }).map(({ property }) => property);
}

describe('memoizeValidationMetadata', () => {
  it('judges as before, the same class again and again', () => {
    for (let i = 0; i < 3; i++) {
      expect(failing(Object.assign(new Base(), { count: 'x' }))).toEqual(['count']);
      expect(failing(Object.assign(new Base(), { count: 2 }))).toEqual([]);
    }
  });

  it('sees a rule declared after a class was validated, and a subclass its parent rules', () => {
    class Later {
      @IsInt()
      first!: unknown;
      second!: unknown;
    }
    expect(failing(Object.assign(new Later(), { first: 1, second: 2 }))).toEqual([]);
    IsString()(Later.prototype, 'second');
    expect(failing(Object.assign(new Later(), { first: 1, second: 2 }))).toEqual(['second']);

    class Derived extends Base {
      @IsString()
      name!: unknown;
    }
    expect(failing(Object.assign(new Derived(), { count: 'x', name: 3 })).sort()).toEqual([
      'count',
      'name',
    ]);
  });

  it('sees a rule a parent gains after its subclass was validated', () => {
    class Parent {
      size!: unknown;
    }
    class Child extends Parent {
      @IsString()
      label!: unknown;
    }
    expect(failing(Object.assign(new Child(), { label: 'a', size: 'big' }))).toEqual([]);
    IsInt()(Parent.prototype, 'size');
    expect(failing(Object.assign(new Child(), { label: 'a', size: 'big' }))).toEqual(['size']);
  });

  it('judges by groups as class-validator does (those are not kept)', () => {
    class Grouped {
      @IsInt({ groups: ['strict'] })
      @IsOptional()
      count!: unknown;
    }
    const value = Object.assign(new Grouped(), { count: 'x' });
    for (let i = 0; i < 2; i++) {
      // Without groups, rules in a group still apply, unless strictGroups.
      expect(validateSync(value).map(({ property }) => property)).toEqual(['count']);
      expect(validateSync(value, { strictGroups: true }).map(({ property }) => property)).toEqual(
        [],
      );
      expect(validateSync(value, { groups: ['strict'] }).map(({ property }) => property)).toEqual([
        'count',
      ]);
      expect(validateSync(value, { groups: ['other'] }).map(({ property }) => property)).toEqual(
        [],
      );
    }
  });
});
