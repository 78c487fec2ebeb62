import { sql } from 'kysely';
import type { JobUsage } from '../protocol/index.js';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { NewModelCall } from './types.js';

/**
 * Appends one row to the gateway's ledger. Token counts (tokens), cost (µ$), times (epoch ms)
 * must be non-negative integers. @throws Error naming the first bad field.
 */
export async function recordModelCall(c: StoreCtx, m: NewModelCall): Promise<void> {
  assertInt('jobId', m.jobId, 1);
  assertInt('attempt', m.attempt, 0);
  assertInt('httpStatus', m.httpStatus, 0);
  assertInt('inputTokens', m.inputTokens, 0);
  assertInt('outputTokens', m.outputTokens, 0);
  assertInt('cacheReadTokens', m.cacheReadTokens, 0);
  assertInt('cacheWriteTokens', m.cacheWriteTokens, 0);
  assertInt('costMicros', m.costMicros, 0);
  assertInt('startedAt', m.startedAt, 0);
  assertInt('durationMs', m.durationMs, 0);
  if (m.costNanos !== undefined) assertInt('costNanos', m.costNanos, 0);
  if (m.runnerId !== undefined && m.runnerId !== null) assertInt('runnerId', m.runnerId, 1);
  await c.db
    .insertInto('model_calls')
    .values({
      job_id: m.jobId,
      attempt: m.attempt,
      provider: m.provider,
      model: m.model,
      api: m.api,
      streamed: m.streamed ? 1 : 0,
      http_status: m.httpStatus,
      input_tokens: m.inputTokens,
      output_tokens: m.outputTokens,
      cache_read_tokens: m.cacheReadTokens,
      cache_write_tokens: m.cacheWriteTokens,
      usage_known: m.usageKnown ? 1 : 0,
      cost_micros: m.costMicros,
      cost_nanos: m.costNanos ?? m.costMicros * 1000,
      runner_id: m.runnerId ?? null,
      refused: m.refused ?? null,
      started_at: m.startedAt,
      duration_ms: m.durationMs,
    })
    .execute();
}

/** Sums over the job's model calls (all zero when it has none). */
export async function jobUsage(c: StoreCtx, jobId: number): Promise<JobUsage> {
  const r = await c.db
    .selectFrom('model_calls')
    .select((eb) => [
      eb.fn.countAll().as('calls'),
      eb.fn.coalesce(eb.fn.sum('input_tokens'), sql.lit(0)).as('input'),
      eb.fn.coalesce(eb.fn.sum('output_tokens'), sql.lit(0)).as('output'),
      eb.fn.coalesce(eb.fn.sum('cache_read_tokens'), sql.lit(0)).as('cacheRead'),
      eb.fn.coalesce(eb.fn.sum('cache_write_tokens'), sql.lit(0)).as('cacheWrite'),
      eb.fn.coalesce(eb.fn.sum('cost_micros'), sql.lit(0)).as('cost'),
      sql<number>`coalesce(sum(case when usage_known = 0 then 1 else 0 end), 0)`.as('estimated'),
    ])
    .where('job_id', '=', jobId)
    .executeTakeFirstOrThrow();
  return {
    modelCalls: num(r.calls),
    inputTokens: num(r.input),
    outputTokens: num(r.output),
    cacheReadTokens: num(r.cacheRead),
    cacheWriteTokens: num(r.cacheWrite),
    costMicros: num(r.cost),
    estimatedCalls: num(r.estimated),
  };
}
