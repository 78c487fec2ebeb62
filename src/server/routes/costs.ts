import type { Hono } from 'hono';
import { CostGroup, parseSince, SINCE_RULE, type CostRollup, type CostRow } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId } from '../http-util.js';
import { takesQuery } from '../query-rule.js';

/**
 * `GET /api/costs?by=job|tree|agent|runner|day|task[&since=7d|<ISO date>][&root=ID]` →
 * {@link CostRollup}: the gateway ledger's calls, tokens and cost (µ$, and exact nano-dollars)
 * per group for calls started since `since` (default 30d), biggest cost first, plus the total.
 * `root` limits it to one job tree: a job that does not exist → 404 `not_found`; a job that is not
 * its tree's root → 400 `invalid_request` naming the tree's root (a tree's calls are counted
 * under its root; an empty rollup would read as "this job spent nothing"). With `by=runner` each
 * row also has `name`, the runner's name (`key` stays its id; no `name` for `none` or a runner
 * the store no longer has); with `by=task` the key is the task id whose turns' trees made the
 * calls (`none`: trees that are no task's turn) and `name` its title (else its first key, else
 * its agent). Bad `by`/`since`/`root` → 400 `invalid_request` naming it.
 */
export function mountCosts(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/costs', takesQuery('by', 'since', 'root'), async (c) => {
    const by = CostGroup.safeParse(c.req.query('by') ?? 'agent');
    if (!by.success) return apiError(c, 400, 'invalid_request', `by: must be one of ${CostGroup.options.join(', ')}`, 'by');
    const now = ctx.now();
    const sinceText = c.req.query('since') ?? '30d';
    const since = parseSince(sinceText, now);
    if (since === null) return apiError(c, 400, 'invalid_request', `since: must be ${SINCE_RULE}`, 'since');
    const rootText = c.req.query('root');
    const rootId = rootText === undefined ? undefined : parseId(rootText);
    if (rootId === null) return idError(c, 'root', 'a job id');
    if (rootId !== undefined) {
      const job = await ctx.store.getJob(rootId);
      if (!job) return apiError(c, 404, 'not_found', `root: no job ${rootId}`, 'root');
      if (job.rootId !== job.id) return apiError(c, 400, 'invalid_request', `root: job ${rootId} is not a tree's root: its calls are counted under its tree's root, job ${job.rootId}`, 'root');
    }
    const rows: CostRow[] = await ctx.store.costRollup({ by: by.data, since: Math.max(0, since), ...(rootId !== undefined ? { rootId } : {}) });
    if (by.data === 'runner') {
      // Added field: each row's runner name beside its id (`key`), for people reading the rollup.
      const names = new Map((await ctx.store.listRunners()).map((r) => [String(r.id), r.name]));
      for (const r of rows) {
        const name = names.get(r.key);
        if (name !== undefined) r.name = name;
      }
    }
    if (by.data === 'task') {
      // The same for tasks: the task's title (else its first key, else its agent, as `flotilla tasks` shows it) beside its id.
      for (const r of rows) {
        const id = parseId(r.key);
        const t = id === null ? null : await ctx.store.getTask(id);
        if (t) r.name = t.title || t.keys[0] || t.agent;
      }
    }
    const total: CostRollup['total'] = { calls: 0, refusedCalls: 0, estimatedCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 0 };
    // every field but costNanos, which `total` starts without
    const summed = Object.keys(total) as Array<Exclude<keyof CostRollup['total'], 'costNanos' | 'name'>>;
    for (const r of rows) for (const k of summed) total[k] += r[k];
    // the exact sum only while a JSON number carries it exactly (protocol CostRow.costNanos)
    let nanos: number | null = 0;
    for (const r of rows) nanos = nanos === null || r.costNanos === undefined ? null : nanos + r.costNanos;
    if (nanos !== null && Number.isSafeInteger(nanos)) total.costNanos = nanos;
    const body: CostRollup = { by: by.data, since: new Date(Math.max(0, since)).toISOString(), rows, total };
    return c.json(body);
  });
}
