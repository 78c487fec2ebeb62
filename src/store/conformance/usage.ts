import { expect, it } from 'vitest';
import type { NewModelCall } from '../types.js';
import { T, newJob, type Harness } from './harness.js';

function call(jobId: number, over: Partial<NewModelCall>): NewModelCall {
  return {
    jobId,
    attempt: 1,
    provider: 'scripted',
    model: 'claude-sonnet-4-5',
    api: 'anthropic-messages',
    streamed: true,
    httpStatus: 200,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    usageKnown: true,
    costMicros: 0,
    startedAt: T,
    durationMs: 10,
    ...over,
  };
}

export function usageTests(h: Harness): void {
  it('model calls: jobUsage sums per job, counts estimated calls', async () => {
    const s = await h.open();
    const j = await newJob(s);
    const other = await newJob(s);
    expect(await s.jobUsage(j.id)).toEqual({ modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 0, estimatedCalls: 0 });
    await s.recordModelCall(call(j.id, { inputTokens: 100, outputTokens: 20, cacheReadTokens: 5, cacheWriteTokens: 1, costMicros: 1234 }));
    await s.recordModelCall(call(j.id, { inputTokens: 2000, outputTokens: 300, cacheWriteTokens: 50, costMicros: 5678, streamed: false }));
    await s.recordModelCall(call(j.id, { inputTokens: 7, costMicros: 10, usageKnown: false, httpStatus: 0 }));
    await s.recordModelCall(call(other.id, { inputTokens: 999, costMicros: 999 }));
    // refused (a budget refusal, bad input): no model call was made; not counted, not estimated
    await s.recordModelCall(call(j.id, { costMicros: 0, usageKnown: false, httpStatus: 402, refused: 'budget' }));
    // 100+2000+7 = 2107; 20+300 = 320; 5; 1+50 = 51; 1234+5678+10 = 6922
    expect(await s.jobUsage(j.id)).toEqual({ modelCalls: 3, inputTokens: 2107, outputTokens: 320, cacheReadTokens: 5, cacheWriteTokens: 51, costMicros: 6922, estimatedCalls: 1 });
    expect(await s.jobUsage(other.id)).toEqual({ modelCalls: 1, inputTokens: 999, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 999, estimatedCalls: 0 });
  });

  it('model calls: 64-bit sums stay exact numbers; bad money is refused', async () => {
    const s = await h.open();
    const j = await newJob(s);
    await s.recordModelCall(call(j.id, { inputTokens: 5_000_000_000, costMicros: 3_000_000_000_000 }));
    await s.recordModelCall(call(j.id, { inputTokens: 5_000_000_001, costMicros: 3_000_000_000_001 }));
    expect(await s.jobUsage(j.id)).toMatchObject({ modelCalls: 2, inputTokens: 10_000_000_001, costMicros: 6_000_000_000_001 });
    await expect(s.recordModelCall(call(j.id, { costMicros: 1.5 }))).rejects.toThrow(/costMicros/);
    await expect(s.recordModelCall(call(j.id, { outputTokens: -1 }))).rejects.toThrow(/outputTokens/);
    expect((await s.jobUsage(j.id)).modelCalls).toBe(2);
  });
}
