import { sql } from 'kysely';
import type { JobUsage } from '../protocol/index.js';
import { num } from './codec.js';
import { chunks, type StoreCtx } from './ctx.js';

/** All-zero usage: a job with no model calls. */
export const ZERO_USAGE: JobUsage = {
  modelCalls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costMicros: 0,
  estimatedCalls: 0,
};

/**
 * Sums of the model calls of many jobs in one grouped query per 500 ids (the ledger page:
 * tokens and µ$ per row). Every id asked for is in the map; jobs without calls get zeros.
 * `modelCalls` and `estimatedCalls` count the calls the gateway made, not the ones it refused
 * (budget, bad input, a paused job's token: they cost nothing and reached no provider; the cost
 * rollups count them apart, `refusedCalls`).
 */
export async function jobUsageMany(c: StoreCtx, jobIds: readonly number[]): Promise<Map<number, JobUsage>> {
  const out = new Map<number, JobUsage>();
  for (const id of jobIds) out.set(id, { ...ZERO_USAGE });
  for (const part of chunks([...new Set(jobIds)], 500)) {
    if (part.length === 0) continue;
    const rows = await c.db
      .selectFrom('model_calls')
      .select((eb) => [
        'job_id',
        sql<number>`sum(case when refused is null then 1 else 0 end)`.as('calls'),
        eb.fn.sum('input_tokens').as('input'),
        eb.fn.sum('output_tokens').as('output'),
        eb.fn.sum('cache_read_tokens').as('cacheRead'),
        eb.fn.sum('cache_write_tokens').as('cacheWrite'),
        eb.fn.sum('cost_micros').as('cost'),
        sql<number>`sum(case when usage_known = 0 and refused is null then 1 else 0 end)`.as('estimated'),
      ])
      .where('job_id', 'in', part)
      .groupBy('job_id')
      .execute();
    for (const r of rows) {
      out.set(num(r.job_id), {
        modelCalls: num(r.calls),
        inputTokens: num(r.input),
        outputTokens: num(r.output),
        cacheReadTokens: num(r.cacheRead),
        cacheWriteTokens: num(r.cacheWrite),
        costMicros: num(r.cost),
        estimatedCalls: num(r.estimated),
      });
    }
  }
  return out;
}
