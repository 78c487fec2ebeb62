import { describe, expect, it } from 'vitest';
import { packOutcome, packUnit, unpackOutcome, unpackUnit, type WriterOutcome, type WriterUnit } from './sqlite-writer-wire.js';
import { LEDGER_COLS, ledgerArgs } from './sqlite-budget-units.js';

describe('the writer thread wire', () => {
  it('a reserve and a settle cross as arrays and come back as they were', () => {
    const reserve: WriterUnit = { kind: 'reserve', rootId: 7, worst: 40_000, now: 1_700_000_000_000, ttlMs: 600_000, callJson: '{"m":"x"}' };
    const settle: WriterUnit = { kind: 'settle', rootId: 7, reservationId: 12, cost: 1_094, now: 1_700_000_000_500, row: [3, 0, 'anthropic'] };
    expect(packUnit(reserve)).toEqual([0, 7, 40_000, 1_700_000_000_000, 600_000, '{"m":"x"}']);
    expect(packUnit(settle)).toEqual([1, 7, 12, 1_094, 1_700_000_000_500, [3, 0, 'anthropic']]);
    expect(unpackUnit(structuredClone(packUnit(reserve)))).toEqual(reserve);
    expect(unpackUnit(structuredClone(packUnit(settle)))).toEqual(settle);
    const bare: WriterUnit = { kind: 'settle', rootId: 1, reservationId: 2, cost: 0, now: 3, row: null };
    expect(unpackUnit(structuredClone(packUnit(bare)))).toEqual(bare);
  });

  it("a reservation crosses as its figures; the budget rebuilt has remaining = limit - spent - reserved - held, heldMicros only when above 0", () => {
    const held: WriterOutcome = { ok: true, value: { ok: true, reservationId: 9, budget: { rootId: 4, limitMicros: 1_000_000, spentMicros: 900_000, reservedMicros: 40_000, heldMicros: 10_000, remainingMicros: 50_000 } } };
    expect(packOutcome(held)).toEqual([9, 4, 1_000_000, 900_000, 40_000, 10_000]);
    expect(unpackOutcome(structuredClone(packOutcome(held)))).toEqual(held);
    const none: WriterOutcome = { ok: true, value: { ok: true, reservationId: 10, budget: { rootId: 4, limitMicros: 1_000_000, spentMicros: 900_000, reservedMicros: 80_000, remainingMicros: 20_000 } } };
    const back = unpackOutcome(structuredClone(packOutcome(none)));
    expect(back).toEqual(none);
    expect(back.ok && back.value !== null && typeof back.value === 'object' && 'heldMicros' in back.value.budget).toBe(false);
  });

  it('null, a settle outcome, a refusal object and an error cross as they are', () => {
    for (const o of [
      { ok: true, value: null },
      { ok: true, value: 'held' },
      { ok: true, value: 'swept' },
      { ok: true, value: 'gone' },
      { ok: true, value: { ok: false, budget: { rootId: 2, limitMicros: 5, spentMicros: 5, reservedMicros: 0, remainingMicros: 0 } } },
      // a child's sub-limit (jobId set) is not packed: its figures go as an object
      { ok: true, value: { ok: true, reservationId: 3, budget: { rootId: 2, jobId: 5, limitMicros: 9, spentMicros: 1, reservedMicros: 1, remainingMicros: 7 } } },
      { ok: false, error: { message: 'FOREIGN KEY constraint failed', name: 'SqliteError', code: 'SQLITE_CONSTRAINT_FOREIGNKEY' } },
    ] satisfies WriterOutcome[]) {
      expect(unpackOutcome(structuredClone(packOutcome(o)))).toEqual(o);
    }
  });

  it("a ledger row's values go by position, in the order of the ledger's columns", () => {
    expect(LEDGER_COLS).toEqual([
      'job_id', 'attempt', 'provider', 'model', 'api', 'streamed', 'http_status', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens',
      'usage_known', 'cost_micros', 'cost_nanos', 'runner_id', 'refused', 'started_at', 'duration_ms', 'web_search_requests',
    ]);
    const row = ledgerArgs({
      jobId: 5, attempt: 1, provider: 'anthropic', model: 'claude-haiku-4-5', api: 'anthropic-messages', streamed: true, httpStatus: 200,
      inputTokens: 12, outputTokens: 3, cacheReadTokens: 2, cacheWriteTokens: 1, usageKnown: true, costMicros: 27, startedAt: 1_000, durationMs: 45, runnerId: 8,
    });
    expect(row).toEqual([5, 1, 'anthropic', 'claude-haiku-4-5', 'anthropic-messages', 1, 200, 12, 3, 2, 1, 1, 27, 27_000, 8, null, 1_000, 45, 0]);
  });
});
