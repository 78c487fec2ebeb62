import { assertInt, type StoreCtx } from './ctx.js';
import { num } from './codec.js';
import { inJobTreeLock, syncBudgetHolds } from './budget-holds.js';
import type { NeedCall } from './types.js';

// The stored needs of jobs paused for budget, priced again when prices change (issue 3; fresh
// tester: a price set 100× by mistake and put back left a paused job asking for $1.80 where
// $0.018 fitted). A pause keeps what its need was worked out from (`jobs.paused_need_call`,
// 0027: gateway/worst-case.ts NeedCall); the budget sweep (server/budget-reprice.ts) reads them
// here and writes each need again at the prices in effect, with the held room it makes
// (budget-holds.ts). Money is integer micro-dollars.

/**
 * The jobs of tree `rootId` whose stored need (`paused_need_micros`) has what it was worked out
 * from (`paused_need_call`, 0027), while that need counts: paused (for budget, or a granted
 * resume waiting for its exit), queued, assigned or running. Ascending id. A call that does not
 * read as one is left out (its need stays as stored). Reads only.
 */
export async function listPricedNeeds(c: StoreCtx, rootId: number): Promise<{ jobId: number; needMicros: number; call: NeedCall }[]> {
  assertInt('rootId', rootId, 1);
  const rows = await c.db
    .selectFrom('jobs')
    .select(['id', 'paused_need_micros', 'paused_need_call'])
    .where('root_id', '=', rootId)
    .where('paused_need_micros', 'is not', null)
    .where('paused_need_call', 'is not', null)
    .where('status', 'in', ['paused', 'queued', 'assigned', 'running'])
    .orderBy('id')
    .execute();
  const out: { jobId: number; needMicros: number; call: NeedCall }[] = [];
  for (const r of rows) {
    const call = parseNeedCall(r.paused_need_call);
    if (call) out.push({ jobId: num(r.id), needMicros: num(r.paused_need_micros!), call });
  }
  return out;
}

/** `paused_need_call`'s JSON as a {@link NeedCall}, or null when it is not one. */
export function parseNeedCall(json: string | null): NeedCall | null {
  if (!json) return null;
  try {
    const v = JSON.parse(json) as Partial<NeedCall>;
    const count = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
    if (typeof v.model !== 'string' || !count(v.inputTokens) || !count(v.outputTokens)) return null;
    if ((v.webSearches !== undefined && !count(v.webSearches)) || (v.toolFeeMicros !== undefined && !count(v.toolFeeMicros))) return null;
    return v as NeedCall;
  } catch {
    return null;
  }
}

/**
 * Sets job `jobId`'s stored need to `needMicros` µ$ (priced again at the prices in effect:
 * server/budget-reprice.ts) and writes its tree's held room again (a holder's room is its
 * need), one transaction with the tree's lock first. False when the job has no need stored.
 * @throws Error when jobId is not an integer >= 1 or needMicros one >= 1.
 */
export async function setPausedNeed(c: StoreCtx, jobId: number, needMicros: number): Promise<boolean> {
  assertInt('jobId', jobId, 1);
  assertInt('needMicros', needMicros, 1);
  const done = await inJobTreeLock(c, jobId, async (trx, rootId) => {
    const row = await trx.updateTable('jobs').set({ paused_need_micros: needMicros }).where('id', '=', jobId).where('paused_need_micros', 'is not', null).returning('id').executeTakeFirst();
    if (!row) return false;
    await syncBudgetHolds(trx, rootId);
    return true;
  });
  return done === true;
}
