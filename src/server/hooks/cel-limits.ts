import type { ASTNode } from '@marcbachmann/cel-js';

/**
 * Static bounds on a webhook CEL expression (keyExpr/summaryExpr), checked when it is compiled
 * (receiver creation → 422, and again on delivery for receivers stored before these bounds).
 * Why: a nested comprehension such as `payload.a.map(x, payload.a.map(y, x + y))` is O(n²) in the
 * body size and froze the event loop for 9.9 s on a 50 KB body (user test). `@marcbachmann/cel-js`
 * 8 only has parse-time structural limits (`CEL_PARSE_LIMITS`), no evaluation budget, so the
 * run-time bound is ours (cel-deadline.ts) and these rules keep expressions small and flat.
 */

/** Longest accepted expression, in characters. */
export const CEL_MAX_CHARS = 1024;

/** Library parse-time limits (`new Environment({ limits })`), tighter than its defaults (100000 nodes, depth 250). */
export const CEL_PARSE_LIMITS = { maxAstNodes: 256, maxDepth: 32, maxListElements: 64, maxMapEntries: 64, maxCallArguments: 8 } as const;

/** Macros that expand to a loop over a list/map (CEL spec "comprehensions"). */
const COMPREHENSIONS = new Set(['map', 'filter', 'all', 'exists', 'exists_one']);

/**
 * Functions whose cost is at most linear in their inputs (cel-js 8 built-ins, lib/functions.js),
 * so an expression using only these, with no comprehension, does O(nodes × body size) work and is
 * evaluated inline. Anything else is evaluated under the deadline: comprehensions, `matches` (a JS
 * RegExp, open to catastrophic backtracking), `cel.bind` (reuses a value, so `cel.bind(b, a + a,
 * cel.bind(c, b + b, ...))` doubles a list per level) and functions added by a later library version.
 */
const LINEAR_FUNCTIONS = new Set([
  'has', 'dyn', 'type', 'bool', 'bytes', 'double', 'int', 'uint', 'string', 'size',
  'startsWith', 'endsWith', 'contains', 'lowerAscii', 'upperAscii', 'trim', 'indexOf', 'lastIndexOf',
  'substring', 'split', 'join', 'json', 'hex', 'base64', 'at',
]);

/** What `inspectCel` found: `needsDeadline` is true when evaluation may be superlinear. */
export interface CelShape {
  needsDeadline: boolean;
}

type Node = ASTNode & { op: string; args: unknown };

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && typeof (v as { op?: unknown }).op === 'string';
}

/** Nodes directly inside a node's `args` (a node, or arrays possibly of arrays; strings are names). */
function nodesIn(args: unknown): Node[] {
  const out: Node[] = [];
  const visit = (v: unknown): void => {
    if (isNode(v)) out.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
  };
  visit(args);
  return out;
}

/** Function name of a `call`/`rcall` node (its first arg), else null. */
function callName(n: Node): string | null {
  if ((n.op === 'call' || n.op === 'rcall') && Array.isArray(n.args) && typeof n.args[0] === 'string') return n.args[0];
  return null;
}

/**
 * Checks the parsed AST of `expr` against the rules above.
 * @throws Error naming the rule, e.g. `nests comprehension macros (filter inside map)`.
 */
export function inspectCel(ast: ASTNode): CelShape {
  let needsDeadline = false;
  const walk = (n: Node, enclosing: string | null): void => {
    const name = callName(n);
    if (name !== null && n.op === 'rcall' && COMPREHENSIONS.has(name)) {
      if (enclosing !== null) {
        throw new Error(`nests comprehension macros (${name} inside ${enclosing}); that costs O(n²) or more in the body size, so only one level of map/filter/all/exists/exists_one is allowed`);
      }
      needsDeadline = true;
      // rcall args: [name, receiver, [iterVar, ...body]]. The receiver runs once, so a chain
      // (`a.filter(..).map(..)`) stays linear; only the body runs once per element.
      const [, receiver, body] = n.args as [string, unknown, unknown];
      for (const c of nodesIn(receiver)) walk(c, enclosing);
      for (const c of nodesIn(body)) walk(c, name);
      return;
    }
    if (name !== null && !LINEAR_FUNCTIONS.has(name)) needsDeadline = true;
    for (const c of nodesIn(n.args)) walk(c, enclosing);
  };
  if (isNode(ast)) walk(ast, null);
  return { needsDeadline };
}
