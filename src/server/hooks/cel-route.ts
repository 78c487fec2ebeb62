import { parse } from '@marcbachmann/cel-js';

/**
 * CEL (Common Expression Language, cel.dev) for generic receivers (issue 7): `keyExpr` maps a
 * payload to a resource key, e.g. Alertmanager's `payload.groupKey`; `summaryExpr` to the text
 * the agent sees. Expressions see `payload` (the parsed JSON body) and `headers` (lower-case
 * names). Uses `@marcbachmann/cel-js`.
 */
export type CompiledCel = (vars: { payload: unknown; headers: Record<string, string> }) => unknown;

const cache = new Map<string, CompiledCel>();

/**
 * Compiles (and caches) an expression.
 * @throws Error `CEL expression ...: <parser message>` when it does not parse.
 */
export function compileCel(expr: string): CompiledCel {
  const hit = cache.get(expr);
  if (hit) return hit;
  let fn: CompiledCel;
  try {
    const p = parse(expr);
    fn = (vars) => p(vars as never);
  } catch (err) {
    throw new Error(`CEL expression ${JSON.stringify(expr)} does not parse: ${(err as Error).message}`);
  }
  if (cache.size > 1000) cache.clear();
  cache.set(expr, fn);
  return fn;
}

/**
 * Evaluates to a string: strings as they are, numbers/booleans (incl. bigint) as text; null,
 * missing fields, errors and other types → null (the event is then unmatched), with the reason.
 */
export function evalCelString(expr: string, vars: { payload: unknown; headers: Record<string, string> }): { value: string | null; error: string | null } {
  try {
    const v = compileCel(expr)(vars);
    if (typeof v === 'string') return { value: v.length ? v : null, error: v.length ? null : 'empty string' };
    if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return { value: String(v), error: null };
    return { value: null, error: `gave ${v === null ? 'null' : typeof v}, not a string` };
  } catch (err) {
    return { value: null, error: (err as Error).message };
  }
}
