/**
 * A served `POST /v1/messages/count_tokens` is in the ledger, so it shows every call a job made:
 * one row, api `anthropic-count-tokens`, the upstream's status, no tokens, usage known, $0 (not
 * billed: the count in its reply is not usage). The cost rollups (`flotilla costs`, GET
 * /api/costs: store.costRollup) and a job's usage count it as a call — it is one the job made —
 * and their token and cost figures stay those of the billed calls alone. With the anthropic
 * provider (a fake upstream) and the scripted one; real HTTP, a real SQLite store.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/types.js';
import { startGateway } from './test-server.js';
import { onSqlite, runningJob } from './test-stores.js';

const TOKEN = 'flj_counttokens_ledger_0123456789ab';
const MESSAGE = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 20 } };
const body = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'count me' }] };

describe.each(['anthropic', 'scripted'] as const)('count_tokens in the ledger (%s provider)', (provider) => {
  it('recorded at $0 with no tokens; rollups count the call, their tokens and cost are the billed call\'s alone', () =>
    onSqlite(async ([store]: Store[]) => {
      const job = await runningJob(store!, TOKEN, { budgetMicros: 5_000_000 });
      const gw = await startGateway<Store>({
        store: store!,
        job: { token: TOKEN },
        upstream: (r) => ({ body: r.url.startsWith('/v1/messages/count_tokens') ? '{"input_tokens":42}' : JSON.stringify(MESSAGE) }),
        config: { provider, modelProviders: [{ pattern: '*', provider }] },
      });
      try {
        const counted = [];
        for (let i = 0; i < 2; i++) {
          const res = await gw.post('/v1/messages/count_tokens', body);
          expect(res.status).toBe(200);
          counted.push(((await res.json()) as { input_tokens: number }).input_tokens);
        }
        // anthropic: the upstream's count; scripted: ⌈bytes / 4⌉
        const estimate = Math.ceil(JSON.stringify(body).length / 4);
        expect(counted).toEqual(provider === 'anthropic' ? [42, 42] : [estimate, estimate]);
        if (provider === 'anthropic') {
          // one billed call: 100 input × 3 µ$ + 20 output × 15 µ$ (claude-sonnet-4-5) = 600 µ$
          expect((await gw.post('/v1/messages', body)).status).toBe(200);
        }
        const billed = provider === 'anthropic' ? { calls: 1, input: 100, output: 20, micros: 600 } : { calls: 0, input: 0, output: 0, micros: 0 };
        const rollup = await store!.costRollup({ by: 'job', since: 0 });
        expect(rollup).toEqual([
          {
            key: String(job.id),
            calls: 2 + billed.calls,
            refusedCalls: 0,
            estimatedCalls: 0,
            inputTokens: billed.input,
            outputTokens: billed.output,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            costMicros: billed.micros,
            costNanos: billed.micros * 1000,
          },
        ]);
        expect(await store!.jobUsage(job.id)).toMatchObject({ modelCalls: 2 + billed.calls, inputTokens: billed.input, outputTokens: billed.output, costMicros: billed.micros, estimatedCalls: 0 });
        const tree = (await store!.getTreeBudget(job.id, Date.now()))!;
        expect([tree.spentMicros, tree.reservedMicros]).toEqual([billed.micros, 0]);
      } finally {
        await gw.close();
      }
    }));
});
