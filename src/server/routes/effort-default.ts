import type { Hono } from 'hono';
import { SetDefaultTierRequest } from '../../protocol/index.js';
import { BUILTIN_EFFORT_TIERS } from '../../core/effort.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { DEFAULT_TIER_SETTING, storedAccountEffort } from '../effort-stored.js';
import { apiError, readBody } from '../http-util.js';
import { effortTierList } from './effort-tiers.js';

/**
 * `PUT /api/effort-default` (admin; body {@link SetDefaultTierRequest}) → 200 EffortTierList (as `GET /api/effort-tiers`)
 * with the new default: the account default tier (issue 8, Settings; the last step of run >
 * step > playbook > agent > account default), stored (migration 0016) so every replica uses it
 * from the next job on. `{"tier": null}` clears it: the server's FLOTILLA_DEFAULT_EFFORT applies
 * again. A tier that is not in effect (built-in, configured or account) → 404 `unknown_tier`
 * naming the known ones; bad body → 400 naming the field.
 */
export function mountEffortDefault(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.put('/api/effort-default', requireAdmin(), async (c) => {
    const body = await readBody(c, SetDefaultTierRequest);
    if (!body.ok) return body.response;
    const { tier } = body.value;
    if (tier !== null) {
      const known = { ...BUILTIN_EFFORT_TIERS, ...(await storedAccountEffort(ctx.store)).tiers };
      if (!(tier in known)) return apiError(c, 404, 'unknown_tier', `no effort tier ${JSON.stringify(tier)} (known: ${Object.keys(known).sort().join(', ')})`, 'tier');
    }
    await ctx.store.setSetting(DEFAULT_TIER_SETTING, tier, ctx.now());
    ctx.effort.invalidate(); // this server's next job sees it at once (other replicas within EFFORT_TTL_MS)
    ctx.log.info('default effort tier set', { tier, by: c.var.principal.name });
    return c.json(await effortTierList(ctx));
  });
}
