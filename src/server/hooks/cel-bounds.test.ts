import { describe, expect, it } from 'vitest';
import { parse } from '@marcbachmann/cel-js';
import { CEL_DEADLINE_MS, compileCel, evalCelString } from './cel-route.js';
import { CEL_MAX_CHARS, inspectCel } from './cel-limits.js';
import { DeadlineExceeded, runWithDeadline } from './cel-deadline.js';

// The user test that froze the server: a ~50 KB body {"a":[0..9999]} and an O(n²) keyExpr (9.9 s before).
const QUAD = 'string(size(payload.a.map(x, payload.a.map(y, x + y))))';
const big = () => ({ payload: { a: Array.from({ length: 10_000 }, (_, i) => i) }, headers: {} });

/** Wall time of `fn` in ms, with its result. */
function timed<T>(fn: () => T): { ms: number; result: T } {
  const t = performance.now();
  const result = fn();
  return { ms: performance.now() - t, result };
}

describe('CEL evaluation bounds', () => {
  it('the quadratic example is refused as a nested comprehension, at once, and the event is unmatched with the reason', () => {
    const { ms, result } = timed(() => evalCelString(QUAD, big()));
    expect(result.value).toBeNull();
    expect(result.error).toBe(`CEL expression ${JSON.stringify(QUAD)} nests comprehension macros (map inside map); that costs O(n²) or more in the body size, so only one level of map/filter/all/exists/exists_one is allowed`);
    expect(ms).toBeLessThan(200);
  });

  it('runWithDeadline stops the quadratic example itself (library parse, no static check) after the budget', () => {
    const p = parse(QUAD);
    const vars = big();
    const { ms, result } = timed(() => {
      try {
        return runWithDeadline(() => p(vars), CEL_DEADLINE_MS);
      } catch (err) {
        return err;
      }
    });
    expect(result).toBeInstanceOf(DeadlineExceeded);
    expect((result as Error).message).toBe('CEL evaluation stopped after its 50 ms budget');
    expect(ms).toBeGreaterThanOrEqual(CEL_DEADLINE_MS - 5);
    expect(ms).toBeLessThan(500);
    // Unbounded, the same call on 1/10 of the input still gives the right answer: 1000 sums.
    const small = { payload: { a: vars.payload.a.slice(0, 1000) }, headers: {} };
    expect(runWithDeadline(() => p(small), 5_000)).toBe('1000');
  });

  it('a single comprehension that is quadratic through its body (x in list) is cut at the budget, and the expression still works afterwards', () => {
    const expr = 'string(size(payload.a.filter(x, x in payload.a)))';
    const { ms, result } = timed(() => evalCelString(expr, big()));
    expect(result).toEqual({ value: null, error: 'CEL evaluation stopped after its 50 ms budget' });
    expect(ms).toBeLessThan(500);
    expect(evalCelString(expr, { payload: { a: [5, 6, 7] }, headers: {} })).toEqual({ value: '3', error: null });
  });

  it('catastrophic regex backtracking in matches() is cut at the budget', () => {
    const { ms, result } = timed(() => evalCelString('payload.s.matches("^(a+)+$")', { payload: { s: `${'a'.repeat(40)}b` }, headers: {} }));
    expect(result.error).toBe('CEL evaluation stopped after its 50 ms budget');
    expect(ms).toBeLessThan(500);
    expect(evalCelString('payload.s.matches("^(a+)+$")', { payload: { s: 'aaa' }, headers: {} })).toEqual({ value: 'true', error: null });
  });

  it('only possibly superlinear expressions pay for the deadline; chains of comprehensions are allowed', () => {
    const shape = (e: string) => inspectCel(parse(e).ast).needsDeadline;
    expect(shape('payload.groupKey')).toBe(false);
    expect(shape('payload.status + ": " + payload.commonLabels.alertname')).toBe(false);
    expect(shape('has(payload.x) ? payload.x.lowerAscii() : headers["x-id"]')).toBe(false);
    expect(shape('payload.alerts.map(a, a.labels.alertname).join(",")')).toBe(true);
    expect(shape('payload.a.filter(x, x > 0).map(y, y * 2).exists(z, z == 4)')).toBe(true);
    expect(shape('payload.s.matches("a+")')).toBe(true);
    expect(shape('cel.bind(b, payload.a + payload.a, size(b + b))')).toBe(true);
    expect(evalCelString('string(size(payload.a.filter(x, x > 0).map(y, y * 2.0)))', { payload: { a: [0, 1, 2] }, headers: {} })).toEqual({ value: '2', error: null });
  });

  it('refuses nesting anywhere in a comprehension body, too long expressions and oversized ASTs with a message naming the rule', () => {
    expect(() => compileCel('payload.a.exists(x, size(payload.b.filter(y, y == x)) > 1)')).toThrow('nests comprehension macros (filter inside exists)');
    expect(() => compileCel('payload.a.all(x, cel.bind(v, x, payload.b.exists_one(y, y == v)))')).toThrow('nests comprehension macros (exists_one inside all)');
    expect(() => compileCel(`payload.k + "${'x'.repeat(CEL_MAX_CHARS)}"`)).toThrow(`is ${CEL_MAX_CHARS + 14} characters; at most ${CEL_MAX_CHARS} are allowed`);
    expect(() => compileCel(Array(200).fill('1').join('+'))).toThrow(/does not parse: Exceeded maxAstNodes \(256\)/);
  });
});
