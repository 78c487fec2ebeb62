import { Environment } from '@marcbachmann/cel-js';
import { CEL_MAX_CHARS, CEL_PARSE_LIMITS, inspectCel } from './cel-limits.js';
import { runWithDeadline } from './cel-deadline.js';

/**
 * CEL (Common Expression Language, cel.dev) for generic receivers (issue 7): `keyExpr` maps a
 * payload to a resource key, e.g. Alertmanager's `payload.groupKey`; `summaryExpr` to the text
 * the agent sees. Expressions see `payload` (the parsed JSON body) and `headers` (lower-case
 * names). Uses `@marcbachmann/cel-js`. Bounded so no expression can stall the event loop:
 * static rules at compile time (cel-limits.ts) and, for possibly superlinear expressions, a
 * `CEL_DEADLINE_MS` wall-clock budget per evaluation (cel-deadline.ts).
 */
export type CompiledCel = (vars: { payload: unknown; headers: Record<string, string> }) => unknown;

/** Budget of one evaluation that may be superlinear, in ms; beyond it the event is unmatched. */
export const CEL_DEADLINE_MS = 50;

/** Same semantics as the library's global `parse` (undeclared variables are `dyn`), with our limits. */
const env = new Environment({ unlistedVariablesAreDyn: true, limits: CEL_PARSE_LIMITS });

const cache = new Map<string, CompiledCel>();

/**
 * Compiles (and caches) an expression. The returned function throws `DeadlineExceeded` when a
 * possibly superlinear expression runs past `CEL_DEADLINE_MS`.
 * @throws Error `CEL expression ...: <reason>` when it does not parse, is longer than
 *   `CEL_MAX_CHARS`, exceeds `CEL_PARSE_LIMITS`, or nests comprehension macros.
 */
export function compileCel(expr: string): CompiledCel {
  const hit = cache.get(expr);
  if (hit) return hit;
  const shown = expr.length > 80 ? `${JSON.stringify(expr.slice(0, 80))}…` : JSON.stringify(expr);
  if (expr.length > CEL_MAX_CHARS) throw new Error(`CEL expression ${shown} is ${expr.length} characters; at most ${CEL_MAX_CHARS} are allowed`);
  let p: ReturnType<Environment['parse']>;
  try {
    p = env.parse(expr);
  } catch (err) {
    throw new Error(`CEL expression ${shown} does not parse: ${(err as Error).message}`);
  }
  let needsDeadline: boolean;
  try {
    ({ needsDeadline } = inspectCel(p.ast));
  } catch (err) {
    throw new Error(`CEL expression ${shown} ${(err as Error).message}`);
  }
  const fn: CompiledCel = needsDeadline
    ? (vars) => runWithDeadline(() => p(vars as never) as unknown, CEL_DEADLINE_MS)
    : (vars) => p(vars as never);
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
