import type { Hono } from 'hono';
import { JobStatus, type JobList } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, parsePositiveInt } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { jobView } from '../views.js';

/** Largest page `GET /api/jobs` returns. */
export const MAX_JOB_PAGE = 200;

/**
 * `GET /api/jobs?status=&agent=&runner=&from=&to=&limit=&before=` → {@link JobList}, newest
 * first, each job with its `usage` (tokens, µ$). `limit` 1..200 (default 50); `before` is the
 * `nextCursor` of the previous page (a job id); `runner` a runner id; `from`/`to` ISO-8601
 * bounds on createdAt (from inclusive, to exclusive; from not before to → 400). The dashboard's
 * "to" day is included: it sends the next UTC midnight.
 * Bad parameters, and unknown ones (e.g. `cursor`: this list pages with `before`) → 400
 * `invalid_request` naming the parameter.
 */
export function mountListJobs(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs', takesQuery('status', 'agent', 'runner', 'from', 'to', 'limit', 'before'), async (c) => {
    const q = c.req.query();
    let status: JobStatus | undefined;
    if (q.status !== undefined) {
      const s = JobStatus.safeParse(q.status);
      if (!s.success) return apiError(c, 400, 'invalid_request', `status: must be one of ${JobStatus.options.join(', ')}`, 'status');
      status = s.data;
    }
    let limit = 50;
    if (q.limit !== undefined) {
      const n = parsePositiveInt(q.limit);
      if (n === null || n > MAX_JOB_PAGE) return apiError(c, 400, 'invalid_request', `limit: must be an integer from 1 to ${MAX_JOB_PAGE}`, 'limit');
      limit = n;
    }
    let before: number | undefined;
    if (q.before !== undefined) {
      const n = parseId(q.before);
      if (n === null) return idError(c, 'before', 'a job id');
      before = n;
    }
    let runnerId: number | undefined;
    if (q.runner !== undefined) {
      const n = parseId(q.runner);
      if (n === null) return idError(c, 'runner', 'a runner id');
      runnerId = n;
    }
    const range: { createdFrom?: number; createdTo?: number } = {};
    for (const [param, key] of [['from', 'createdFrom'], ['to', 'createdTo']] as const) {
      if (q[param] === undefined) continue;
      const ms = Date.parse(q[param]);
      if (!Number.isFinite(ms) || ms < 0) return apiError(c, 400, 'invalid_request', `${param}: must be an ISO-8601 date or time`, param);
      range[key] = ms;
    }
    if (range.createdFrom !== undefined && range.createdTo !== undefined && range.createdFrom >= range.createdTo) {
      return apiError(c, 400, 'invalid_request', `from: must be before to (to is exclusive), got from ${q.from} and to ${q.to}`, 'from');
    }
    // one row more than the page: whether an older page exists (a page that ended exactly at the
    // oldest job offered an empty next page: a fresh tester)
    const rows = await ctx.store.listJobs({
      limit: limit + 1,
      ...(status ? { status } : {}),
      ...(q.agent ? { agent: q.agent } : {}),
      ...(before ? { before } : {}),
      ...(runnerId ? { runnerId } : {}),
      ...range,
    });
    const more = rows.length > limit;
    if (more) rows.length = limit;
    const usage = await ctx.store.jobUsageMany(rows.map((r) => r.id));
    const body: JobList = { jobs: rows.map((r) => jobView(r, usage.get(r.id))), nextCursor: more ? rows[rows.length - 1]!.id : null };
    return c.json(body);
  });
}
