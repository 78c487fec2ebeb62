import type { JobUsage } from '../protocol/index.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { jobUsageMany, ZERO_USAGE } from './usage-batch.js';
import type { Insertable } from 'kysely';
import type { ModelCallsTable } from './schema.js';
import type { NewModelCall } from './types.js';

/**
 * Appends one row to the gateway's ledger. Token counts (tokens), cost (µ$), times (epoch ms)
 * must be non-negative integers. @throws Error naming the first bad field.
 */
export async function recordModelCall(c: StoreCtx, m: NewModelCall): Promise<void> {
  await c.db.insertInto('model_calls').values(modelCallValues(m)).execute();
}

/**
 * The `model_calls` row of a call (also written by budgets.ts settleBudget, in its
 * transaction). @throws Error naming the first bad field (tokens, µ$, epoch ms: integers >= 0).
 */
export function modelCallValues(m: NewModelCall): Insertable<ModelCallsTable> {
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
  if (m.webSearchRequests !== undefined) assertInt('webSearchRequests', m.webSearchRequests, 0);
  if (m.runnerId !== undefined && m.runnerId !== null) assertInt('runnerId', m.runnerId, 1);
  return {
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
    web_search_requests: m.webSearchRequests ?? 0,
  };
}

/** Sums over the job's model calls (all zero when it has none): {@link jobUsageMany} for one id. */
export async function jobUsage(c: StoreCtx, jobId: number): Promise<JobUsage> {
  return (await jobUsageMany(c, [jobId])).get(jobId) ?? { ...ZERO_USAGE };
}
