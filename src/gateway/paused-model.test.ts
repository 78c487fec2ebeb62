/**
 * A call of a job paused for budget is refused (job-auth.ts refusePausedCall) and recorded; its
 * ledger row names the model the request named, read best-effort as for the other refusals
 * (refused-model.ts): on every route, `unknown` only when the body names no valid model; and
 * whether it streams.
 * Real HTTP, a real SQLite store (the row read from the file), a job really paused for budget.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { startGateway } from './test-server.js';
import { runningJob } from './test-stores.js';

const TOKEN = 'flj_pausedmodel_0123456789abcdefgh';

describe('a refused call of a job paused for budget', () => {
  it('its ledger row names the model the body names (every route); unknown when the body names none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-paused-model-'));
    const file = join(dir, 'flotilla.db');
    const store = await openSqliteStore(file);
    try {
      const job = await runningJob(store, TOKEN, { budgetMicros: 1_000_000, spentMicros: 1_000_000 });
      expect(await store.pauseJobForBudget(job.id, 1, 'budget exhausted', Date.now())).toMatchObject({ status: 'paused' });
      const gw = await startGateway<Store>({ store, job: { token: TOKEN }, openai: 'openai', upstream: () => ({ status: 500, body: '{}' }) });
      const sent: Array<[path: string, body: string, status: number]> = [
        ['/v1/messages', JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }), 402],
        ['/v1/messages', JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }), 402],
        ['/v1/messages/count_tokens', JSON.stringify({ model: 'claude-opus-4-1', messages: [{ role: 'user', content: 'hi' }] }), 402],
        ['/v1/chat/completions', JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] }), 429],
        ['/v1/chat/completions', JSON.stringify({ model: 'gpt-5', stream: true, messages: [{ role: 'user', content: 'hi' }] }), 429],
        ['/v1/responses', JSON.stringify({ model: 'gpt-5-mini', input: 'hi' }), 429],
        ['/v1/messages', JSON.stringify({ max_tokens: 10, messages: [] }), 402],
        ['/v1/chat/completions', 'not json', 429],
      ];
      try {
        for (const [path, body, status] of sent) {
          const res = await gw.post(path, body);
          const text = await res.text();
          expect([path, res.status], text).toEqual([path, status]);
        }
        expect(gw.up.seen).toHaveLength(0);
      } finally {
        await gw.close();
      }
      const db = new BetterSqlite3(file, { readonly: true });
      try {
        const rows = db.prepare('select api, model, streamed, http_status, refused from model_calls order by id').all();
        // a streaming call is recorded as streamed (fresh-tester finding: 0 while paused)
        expect(rows).toEqual([
          { api: 'anthropic-messages', model: 'claude-haiku-4-5', streamed: 0, http_status: 402, refused: 'budget' },
          { api: 'anthropic-messages', model: 'claude-haiku-4-5', streamed: 1, http_status: 402, refused: 'budget' },
          { api: 'anthropic-count-tokens', model: 'claude-opus-4-1', streamed: 0, http_status: 402, refused: 'budget' },
          { api: 'openai-chat', model: 'gpt-5', streamed: 0, http_status: 429, refused: 'budget' },
          { api: 'openai-chat', model: 'gpt-5', streamed: 1, http_status: 429, refused: 'budget' },
          { api: 'openai-responses', model: 'gpt-5-mini', streamed: 0, http_status: 429, refused: 'budget' },
          { api: 'anthropic-messages', model: 'unknown', streamed: 0, http_status: 402, refused: 'budget' },
          { api: 'openai-chat', model: 'unknown', streamed: 0, http_status: 429, refused: 'budget' },
        ]);
      } finally {
        db.close();
      }
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('its ledger row names the provider the model\'s route names, as every other refusal\'s (it named the wire format\'s default upstream: a fresh tester)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-paused-provider-'));
    const file = join(dir, 'flotilla.db');
    const store = await openSqliteStore(file);
    try {
      const job = await runningJob(store, TOKEN, { budgetMicros: 1_000_000, spentMicros: 1_000_000 });
      expect(await store.pauseJobForBudget(job.id, 1, 'budget exhausted', Date.now())).toMatchObject({ status: 'paused' });
      const gw = await startGateway<Store>({
        store,
        job: { token: TOKEN },
        openai: 'openai-compatible',
        config: { modelProviders: [{ pattern: 'gpt-*', provider: 'openai' }, { pattern: 'qwen*', provider: 'openai-compatible' }, { pattern: 'claude-*', provider: 'anthropic' }] },
        upstream: () => ({ status: 500, body: '{}' }),
      });
      try {
        for (const [path, body, status] of [
          ['/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, 429],
          ['/v1/responses', { model: 'gpt-4o', input: 'hi' }, 429],
          ['/v1/chat/completions', { model: 'qwen3-coder', messages: [{ role: 'user', content: 'hi' }] }, 429],
          ['/v1/messages', { model: 'qwen3-coder', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, 402],
          ['/v1/messages', { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, 402],
          ['/v1/responses', { model: 'no-route-matches', input: 'hi' }, 429],
        ] as const)
          expect((await gw.post(path, body)).status, JSON.stringify(body)).toBe(status);
        expect(gw.up.seen).toHaveLength(0);
      } finally {
        await gw.close();
      }
      const db = new BetterSqlite3(file, { readonly: true });
      try {
        expect(db.prepare('select api, model, provider from model_calls order by id').all()).toEqual([
          { api: 'openai-chat', model: 'gpt-4o', provider: 'openai' },
          { api: 'openai-responses', model: 'gpt-4o', provider: 'openai' },
          { api: 'openai-chat', model: 'qwen3-coder', provider: 'openai-compatible' },
          { api: 'anthropic-messages', model: 'qwen3-coder', provider: 'openai-compatible' },
          { api: 'anthropic-messages', model: 'claude-haiku-4-5', provider: 'anthropic' },
          // no route matches: the wire format's own
          { api: 'openai-responses', model: 'no-route-matches', provider: 'openai-compatible' },
        ]);
      } finally {
        db.close();
      }
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
