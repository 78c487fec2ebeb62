import type { Context, Hono } from 'hono';
import { describeIssues, UpdateRunnerRequest, type UpdateRunnerResponse } from '../../protocol/index.js';
import { parseJsonBounded } from '../../core/json-depth.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId, repeatedKeyError, type BodyResult } from '../http-util.js';
import { runnerView } from '../views.js';
import { heldSlotsOf } from '../runner-held.js';
import { SERVER_VERSION } from '../runner-updates.js';

/**
 * `POST /api/runners/{id}/update` (admin; body {@link UpdateRunnerRequest}: `{ "version": "0.2.0" }`,
 * or none / `{}` for the server's own version) → 200 {@link UpdateRunnerResponse}: the runner,
 * connected to this server, is told `runner.update`; it reads `updating` and gets no new job
 * while it drains its running jobs, runs its update command and re-executes itself (it comes
 * back `online` on the new code; a failed command is a line of its activity and it is `online`
 * again). Already updating → 200 with `started: false` (nothing sent again).
 * Errors (nothing changes): bad body → 400 `invalid_json` / `invalid_request` naming the field;
 * unknown runner → 404 `not_found`; revoked → 409 `revoked`; offline → 409 `offline`; a runner
 * that cannot update itself (the one inside `flotilla up`, `hello.selfUpdate` false) → 409
 * `cannot_update`; connected
 * to another server replica (or not ready yet) → 409 `not_connected`; an id outside
 * 1..2147483647 → 400 `invalid_request` (field `id`).
 */
export function mountUpdateRunner(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/runners/:id{[0-9]+}/update', requireAdmin(), async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a runner id');
    const body = await readUpdateBody(c);
    if (!body.ok) return body.response;
    const row = await ctx.store.getRunner(id);
    if (!row) return apiError(c, 404, 'not_found', `no runner ${c.req.param('id')}`, 'id');
    if (row.revokedAt !== null) return apiError(c, 409, 'revoked', `runner ${row.name} (${row.id}) is revoked: it cannot update`);
    const view = async () => {
      const active = await ctx.store.listActiveJobsForRunner(row.id);
      const fresh = (await ctx.store.getRunner(row.id)) ?? row;
      return runnerView(fresh, active.map((j) => j.id), ctx.now(), ctx.heartbeatTimeoutMs, await heldSlotsOf(ctx.store, row.id), ctx.hub.isUpdating(row.id));
    };
    const before = await view();
    if (before.status === 'offline') return apiError(c, 409, 'offline', `runner ${row.name} (${row.id}) is offline: it can update once it is connected`);
    const version = body.value.version ?? SERVER_VERSION;
    const sent = await ctx.hub.requestUpdate(row.id, version, row.version, c.var.principal.name);
    if (sent === 'cannot_update') {
      return apiError(c, 409, 'cannot_update', `runner ${row.name} (${row.id}) runs inside \`flotilla up\` and cannot update itself: update the package on its machine and start \`flotilla up\` again`);
    }
    if (sent === 'not_connected') return apiError(c, 409, 'not_connected', `runner ${row.name} (${row.id}) is not connected to this server (it may be connected to another replica: ask that one)`);
    ctx.log.info('runner update requested', { runnerId: row.id, version, started: sent === 'sent' });
    const res: UpdateRunnerResponse = { runner: await view(), version, started: sent === 'sent' };
    return c.json(res);
  });
}

/** The body: none (or whitespace) means `{}`; else JSON parsed with {@link UpdateRunnerRequest}. */
async function readUpdateBody(c: Context): Promise<BodyResult<UpdateRunnerRequest>> {
  const text = await c.req.text();
  if (text.trim() === '') return { ok: true, value: {} };
  let raw: unknown;
  try {
    raw = parseJsonBounded(text);
  } catch {
    return { ok: false, response: apiError(c, 400, 'invalid_json', 'request body must be empty or a JSON document like {"version": "0.2.0"}') };
  }
  const repeated = repeatedKeyError(c, text);
  if (repeated) return { ok: false, response: repeated };
  const parsed = UpdateRunnerRequest.safeParse(raw);
  if (parsed.success) return { ok: true, value: parsed.data };
  const first = parsed.error.issues[0];
  const field = first?.code === 'unrecognized_keys' ? first.keys[0] : first && first.path.length ? first.path.map(String).join('.') : undefined;
  return { ok: false, response: apiError(c, 400, 'invalid_request', describeIssues(parsed.error.issues), field) };
}
