// The Run job form's input and budget (web/src/components/schema-form.tsx, web/src/format.ts):
// an agent whose schema names no field takes any JSON object (the form said "no input fields"
// and sent {}), and the budget takes the CLI's dollars (`1e2` started a $100 job): fresh-tester findings.
import { describe, expect, it } from 'vitest';
import { FREE_INPUT, initialValues, takesFreeInput, toInput } from '../../web/src/components/schema-form.js';
import { typedUsd } from '../../web/src/format.js';

describe('Run job form', () => {
  it('an open object schema (or none) takes a JSON object; a closed one takes nothing', () => {
    expect(takesFreeInput({ type: 'object' })).toBe(true);
    expect(takesFreeInput({})).toBe(true);
    expect(takesFreeInput({ type: 'object', additionalProperties: false })).toBe(false);
    expect(takesFreeInput({ type: 'object', properties: { repo: { type: 'string' } } })).toBe(false);
    expect(toInput({ type: 'object' }, { [FREE_INPUT]: ' {"calls": [1, 2], "repo": "org/app"} ' })).toEqual({ calls: [1, 2], repo: 'org/app' });
    expect(toInput({ type: 'object' }, { [FREE_INPUT]: '' })).toEqual({});
    expect(toInput({ type: 'object' }, initialValues({ type: 'object' }))).toEqual({});
    for (const bad of ['[1]', 'null', '"x"', '{oops'])
      expect(() => toInput({ type: 'object' }, { [FREE_INPUT]: bad })).toThrow('input: must be a JSON object, e.g. {"repo": "org/app"}');
  });

  it('the budget: plain decimals only, as the CLI and API take dollars', () => {
    expect(typedUsd('2.5')).toBe(2.5);
    expect(typedUsd('0.000001')).toBe(0.000001);
    for (const bad of ['1e2', '-1', '0', '0.0000001', '100001', '0x10', ' ', '+3', ' 2 ', '2 ']) expect(typedUsd(bad)).toBeNull();
  });
});
