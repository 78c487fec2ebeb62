import type { Hono } from 'hono';
import { JobStatus, type JobList } from '../../protocol/index.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, parsePositiveInt } from '../http-util.js';
import { jobView } from '../views.js';

/** Largest page `GET /api/jobs` returns. */
export const MAX_JOB_PAGE = 200;

/**
 * `GET /api/jobs?status=&agent=&limit=&before=` → {@link JobList}, newest first. `limit`
 * 1..200 (default 50); `before` is the `nextCursor` of the previous page (a job id).
 * Bad parameters → 400 `invalid_request` naming the parameter.
 */
export function mountListJobs(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/jobs', async (c) => {
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
      const n = parsePositiveInt(q.before);
      if (n === null) return apiError(c, 400, 'invalid_request', 'before: must be a positive integer (a job id)', 'before');
      before = n;
    }
    const rows = await ctx.store.listJobs({ limit, ...(status ? { status } : {}), ...(q.agent ? { agent: q.agent } : {}), ...(before ? { before } : {}) });
    const body: JobList = { jobs: rows.map((r) => jobView(r)), nextCursor: rows.length === limit ? rows[rows.length - 1]!.id : null };
    return c.json(body);
  });
}
