import type { JobUsage } from '../protocol/index.js';

/** Usage of no model call: every count (calls, tokens, micro-dollars) zero. */
export const ZERO_USAGE: JobUsage = { modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 0, estimatedCalls: 0 };

/** Adds two usage sums field by field (model calls, tokens, micro-dollars, estimated calls). */
export function addUsage(a: JobUsage, b: JobUsage): JobUsage {
  return {
    modelCalls: a.modelCalls + b.modelCalls,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    costMicros: a.costMicros + b.costMicros,
    estimatedCalls: a.estimatedCalls + b.estimatedCalls,
  };
}
