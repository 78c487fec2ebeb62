import type { MiddlewareHandler } from 'hono';
import { hashToken } from '../core/tokens.js';
import { descendantsOf } from '../core/job-tree.js';
import type { AppEnv } from './auth.js';
import { bearerToken } from './auth.js';
import type { ServerContext } from './context.js';
import { apiError } from './http-util.js';

/** Job-scoped routes: `/api/jobs/<id>` and `/api/jobs/<id>/<tree|events|budget|cancel>`. */
const JOB_ROUTE = /^\/api\/jobs\/([0-9]{1,15})(?:\/(tree|events|budget|cancel))?$/;

/**
 * Middleware for /api/* that lets a running job call the API with its own job token
 * (`Authorization: Bearer flj_...`, the token its harness gets as FLOTILLA_JOB_TOKEN; issue 6).
 * A token of a job paused for budget → 409 `job_paused` naming the job and the top-up that
 * resumes it (as a new attempt with a new token: this one is then refused 401); of any other job that is not `assigned`/`running` → 401 `unauthorized`. What a job may do:
 * - `POST /api/jobs`: start a child of itself (see child-jobs.ts);
 * - `GET /api/jobs/:id[/tree|/events|/budget]` for any job of its own tree;
 * - `POST /api/jobs/:id/cancel` for its descendants only;
 * - `GET /api/agents`.
 * Anything else → 403 `forbidden` naming the rule. Sets `c.var.jobCaller` (the calling job's
 * row), which {@link requireApiToken} takes as authenticated. Other bearer tokens pass through
 * untouched. The token itself is never logged or echoed.
 */
export function jobTokenAuth(ctx: ServerContext): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = bearerToken(c.req.header('authorization'));
    if (!token || !token.startsWith('flj_')) return next();
    const job = await ctx.store.findJobByTokenHash(hashToken(token));
    if (!job) {
      // a job paused for budget is not over: say so rather than "unknown token" (its harness may still run for the pause's settle time)
      const paused = await ctx.store.findPausedJobByTokenHash(hashToken(token));
      if (paused) return apiError(c, 409, 'job_paused', `job ${paused.id} is paused for budget: a top-up (flotilla budget ${paused.id} --add USD) resumes it as a new attempt, with a new job token`);
      return apiError(c, 401, 'unauthorized', 'unknown job token, or its job is no longer running (a resumed or retried job runs with a new token)');
    }
    const path = c.req.path.replace(/\/+$/, '');
    const method = c.req.method;
    let allowed = false;
    if (method === 'POST' && path === '/api/jobs') allowed = true;
    else if (method === 'GET' && path === '/api/agents') allowed = true;
    else {
      const m = JOB_ROUTE.exec(path);
      if (m) {
        const target = Number(m[1]);
        const tree = await ctx.store.listTreeJobs(job.rootId);
        if (method === 'GET' && m[2] !== 'cancel') allowed = tree.some((j) => j.id === target);
        else if (method === 'POST' && m[2] === 'cancel') allowed = descendantsOf(tree, job.id).includes(target);
        if (!allowed && (method === 'GET' || m[2] === 'cancel')) {
          return apiError(
            c,
            403,
            'forbidden',
            m[2] === 'cancel' ? `job ${job.id} may cancel only its own descendants, and job ${target} is not one` : `job ${job.id} may read only the jobs of its own tree (root ${job.rootId}), and job ${target} is not one`,
            'id',
          );
        }
      }
    }
    if (!allowed) return apiError(c, 403, 'forbidden', `a job token may start child jobs (POST /api/jobs), read its own tree's jobs and cancel its descendants; not ${method} ${path}`);
    c.set('jobCaller', job);
    return next();
  };
}
