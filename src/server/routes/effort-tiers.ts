import type { Hono } from 'hono';
import { EffortTierName, SetEffortTierRequest, type EffortTierList, type EffortTierView } from '../../protocol/index.js';
import { BUILTIN_EFFORT_TIERS } from '../../core/effort.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { accountEffort } from '../effort.js';
import { storedAccountEffort } from '../effort-stored.js';
import { apiError, readBody } from '../http-util.js';
import { iso } from '../views.js';

/**
 * The tiers in effect: built-in, configured (FLOTILLA_EFFORT_TIERS) and account tiers merged by
 * name (account > config > builtin), name ascending, with the default tier and its source.
 * @throws Error naming FLOTILLA_EFFORT_TIERS when it is malformed; errors of the store.
 */
export async function effortTierList(ctx: Pick<ServerContext, 'store'>): Promise<EffortTierList> {
  const env = accountEffort();
  const byName = new Map<string, EffortTierView>();
  for (const [name, t] of Object.entries(BUILTIN_EFFORT_TIERS)) byName.set(name, { name, model: t.model, level: t.level, source: 'builtin', updatedAt: null });
  for (const [name, t] of Object.entries(env.tiers)) byName.set(name, { name, model: t.model, level: t.level, source: 'config', updatedAt: null });
  for (const t of await ctx.store.listEffortTiers()) byName.set(t.name, { name: t.name, model: t.model, level: t.level, source: 'account', updatedAt: iso(t.updatedAt) });
  const d = await storedAccountEffort(ctx.store);
  return { tiers: [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)), defaultTier: d.defaultTier, defaultSource: d.defaultSource };
}

/**
 * Effort tiers (issue 8, Settings). Members read, admins change; changes are stored
 * (migration 0014) and every replica resolves jobs with them from the next job on
 * (server/effort-stored.ts).
 * - `GET /api/effort-tiers` → {@link EffortTierList}: built-in, configured (FLOTILLA_EFFORT_TIERS)
 *   and account tiers merged by name (account > config > builtin), name ascending;
 * - `PUT /api/effort-tiers/{name}` {@link SetEffortTierRequest} (admin) → 200 {@link EffortTierView};
 * - `DELETE /api/effort-tiers/{name}` (admin) → 204; 404 `not_found` when the account stored no
 *   tier of that name (built-in and configured tiers cannot be deleted here); 409 `tier_in_use`
 *   when it is the stored default tier and no built-in or configured tier has its name.
 * The default tier itself: routes/effort-default.ts.
 * Bad name → 400 `invalid_request` (field `name`); bad body → 400 naming the field.
 * A bad FLOTILLA_EFFORT_TIERS on the server → 500 (error names the variable).
 */
export function mountEffortTiers(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/effort-tiers', async (c) => c.json(await effortTierList(ctx)));

  app.put('/api/effort-tiers/:name', requireAdmin(), async (c) => {
    const name = EffortTierName.safeParse(c.req.param('name'));
    if (!name.success) return apiError(c, 400, 'invalid_request', `name: ${name.error.issues[0]?.message ?? 'invalid'}`, 'name');
    const body = await readBody(c, SetEffortTierRequest);
    if (!body.ok) return body.response;
    const row = await ctx.store.setEffortTier(name.data, body.value.model, body.value.level, ctx.now());
    ctx.effort.invalidate(); // this server's next job sees it at once (other replicas within EFFORT_TTL_MS)
    ctx.log.info('effort tier set', { name: row.name, model: row.model, level: row.level, by: c.var.principal.name });
    const view: EffortTierView = { name: row.name, model: row.model, level: row.level, source: 'account', updatedAt: iso(row.updatedAt) };
    return c.json(view);
  });

  app.delete('/api/effort-tiers/:name', requireAdmin(), async (c) => {
    const name = c.req.param('name');
    // The stored default must keep naming a tier: only a built-in or configured tier of that name may outlive the account's.
    const d = await storedAccountEffort(ctx.store);
    if (d.defaultSource === 'account' && d.defaultTier === name && !(name in BUILTIN_EFFORT_TIERS) && !(name in accountEffort().tiers)) {
      return apiError(c, 409, 'tier_in_use', `tier ${JSON.stringify(name)} is the default tier: set another default first`, 'name');
    }
    const deleted = await ctx.store.deleteEffortTier(name);
    ctx.effort.invalidate();
    if (!deleted) return apiError(c, 404, 'not_found', `no account tier ${JSON.stringify(name)} (built-in and configured tiers cannot be deleted)`, 'name');
    ctx.log.info('effort tier deleted', { name, by: c.var.principal.name });
    return c.body(null, 204);
  });
}
