import type { Hono } from 'hono';
import { parseLabelList, roleLabelConflict, RunnerStatus, type Runner, type RunnerList } from '../../protocol/index.js';
import { selectorMatches } from '../../core/labels.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { runnerView } from '../views.js';
import type { ActiveAssignment } from '../../store/types.js';

/**
 * `GET /api/runners[?label=k=v,k2=v2][&status=online|busy|on_hold|...][&role=R]` →
 * {@link RunnerList}: every runner (status on the server clock, running job ids, `slotsUsed` =
 * the slots those jobs hold, core/capacity.ts; `keptSlots`, those idle tasks keep) and the number of queued jobs. Filters: `label` keeps
 * runners having all those labels, `role` is short for `label=role=R`, `status` one status.
 * Four queries whatever the fleet size (runners, active assignments, queued count, kept task slots).
 * Bad filter → 400 `invalid_request` naming the parameter (a key given twice in `label`; a
 * `role` other than the `label`'s role=: field `role`).
 */
export function mountListRunners(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/runners', takesQuery('label', 'role', 'status'), async (c) => {
    let want: Record<string, string> = {};
    try {
      const label = c.req.query('label');
      if (label !== undefined) want = parseLabelList(label);
    } catch (err) {
      return apiError(c, 400, 'invalid_request', `label: ${(err as Error).message}`, 'label');
    }
    const role = c.req.query('role');
    const conflict = roleLabelConflict(role, want);
    if (conflict) return apiError(c, 400, 'invalid_request', `role: ${conflict}`, 'role');
    if (role !== undefined) want = { ...want, role };
    const statusText = c.req.query('status');
    const status = statusText === undefined ? undefined : RunnerStatus.safeParse(statusText);
    if (status && !status.success) {
      return apiError(c, 400, 'invalid_request', `status: must be one of ${RunnerStatus.options.join(', ')}`, 'status');
    }
    const now = ctx.now();
    const [rows, active, queued, kept] = await Promise.all([ctx.store.listRunners(), ctx.store.listActiveAssignments(), ctx.store.countQueuedJobs(), ctx.store.listTaskSlots(now)]);
    const byRunner = new Map<number, ActiveAssignment[]>();
    for (const a of active) {
      const list = byRunner.get(a.runnerId);
      if (list) list.push(a);
      else byRunner.set(a.runnerId, [a]);
    }
    const runners: Runner[] = [];
    for (const r of rows) {
      if (!selectorMatches(want, r.labels)) continue;
      const mine = byRunner.get(r.id) ?? [];
      const v = runnerView(r, mine.map((a) => a.jobId), now, ctx.heartbeatTimeoutMs, mine, ctx.hub.isUpdating(r.id), kept.filter((k) => k.runnerId === r.id));
      if (status?.success && v.status !== status.data) continue;
      runners.push(v);
    }
    const body: RunnerList = { runners, queued };
    return c.json(body);
  });
}
