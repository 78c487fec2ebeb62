import { test } from 'node:test';
import assert from 'node:assert/strict';
import { add, multiply, sum } from '../src/calc.js';

test('add', () => assert.equal(add(2, 3), 5));
test('multiply', () => assert.equal(multiply(4, 5), 20));
test('sum of an empty list is 0', () => assert.equal(sum([]), 0));
test('sum adds every element', () => assert.equal(sum([1, 2, 3, 4]), 10));
