import { expect, it } from 'vitest';
import { findRepeatedKey } from './json-keys.js';

it('names the first key given twice in one object, with its path; the same key in different objects is fine', () => {
  expect(findRepeatedKey('{"addUsd":1, "addUsd":2}')).toBe('addUsd');
  expect(findRepeatedKey('{"input":{"repo":"a","ref":"x","repo":"b"}}')).toBe('input.repo');
  expect(findRepeatedKey('{"items":[{"n":1},{"n":2,"m":1,"n":3}]}')).toBe('items.1.n');
  expect(findRepeatedKey('{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}],"x":"{\\"x\\":1,\\"x\\":2}"}')).toBeNull();
  expect(findRepeatedKey('[1,2,{"a":1}]')).toBeNull();
  // escapes: two spellings of one name are one name
  expect(findRepeatedKey('{"a\\u0062":1,"ab":2}')).toBe('ab');
});
