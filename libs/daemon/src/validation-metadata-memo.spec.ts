import 'reflect-metadata';
import { IsInt, IsString, validateSync } from 'class-validator';
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
});
