/**
 * Chat Completions takes `null` for `max_tokens`, `max_completion_tokens` and `n` (OpenAI: the
 * same as leaving it out), as Responses takes `max_output_tokens: null`: such a call is served,
 * not refused 400 "expected number, received null"; a null limit is an absent one (the gateway
 * sets the limit it reserved for, and no upstream sees a second, null limit field), and
 * `max_tokens: null` next to `max_completion_tokens: 5` is no conflict. Real HTTP: the gateway
 * on its own port, a fake OpenAI upstream recording what it received.
 */
import { describe, expect, it } from 'vitest';
import { BOTH_OUTPUT_LIMITS_REFUSED } from './openai-wire.js';
import { forFile, startGateway } from './test-server.js';

const TOKEN = 'flj_chatnulls_0123456789abcdefghij';
const OK = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
const chat = (extra: object) => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], ...extra });

const gw = forFile(() => startGateway({ job: { token: TOKEN, budgetMicros: 50_000_000 }, openai: 'openai', upstream: () => ({ body: OK }) }));

/** Posts a Chat Completions body; its status and what the upstream received (null when nothing). */
async function send(body: object): Promise<{ status: number; text: string; upstream: Record<string, unknown> | null }> {
  const before = gw.up.seen.length;
  const res = await gw.post('/v1/chat/completions', body);
  const text = await res.text();
  const got = gw.up.seen.slice(before);
  return { status: res.status, text, upstream: got.length ? (JSON.parse(got[0]!.body) as Record<string, unknown>) : null };
}

describe('Chat Completions: null limits and n mean absent', () => {
  it('max_tokens, max_completion_tokens or n null: served (200), the upstream gets the same limit as with the field left out, no null limit', async () => {
    const absent = await send(chat({}));
    expect(absent.status).toBe(200);
    const limit = absent.upstream!.max_completion_tokens;
    expect(typeof limit).toBe('number');
    for (const extra of [{ max_tokens: null }, { max_completion_tokens: null }, { max_tokens: null, max_completion_tokens: null }, { n: null }]) {
      const r = await send(chat(extra));
      expect([JSON.stringify(extra), r.status], r.text).toEqual([JSON.stringify(extra), 200]);
      expect(r.upstream!.max_completion_tokens, JSON.stringify(extra)).toBe(limit);
      expect(Object.hasOwn(r.upstream!, 'max_tokens'), JSON.stringify(extra)).toBe(false);
    }
    // one served row per call
    const rows = gw.store.calls.slice(-5);
    expect(rows.map((c) => c.httpStatus)).toEqual([200, 200, 200, 200, 200]);
  });

  it('max_tokens: null with max_completion_tokens: 5 is no conflict: served with the limit 5; both set still refused', async () => {
    const r = await send(chat({ max_tokens: null, max_completion_tokens: 5 }));
    expect(r.status, r.text).toBe(200);
    expect(r.upstream!.max_completion_tokens).toBe(5);
    const r2 = await send(chat({ max_tokens: 7, max_completion_tokens: null }));
    expect(r2.status, r2.text).toBe(200);
    expect(r2.upstream!.max_tokens).toBe(7);
    const both = await send(chat({ max_tokens: 5, max_completion_tokens: 5 }));
    expect(both.status).toBe(400);
    expect(both.upstream).toBeNull();
    expect((JSON.parse(both.text) as { error: { message: string } }).error.message).toBe(BOTH_OUTPUT_LIMITS_REFUSED);
  });
});

describe('stream: null (OpenAI: boolean or null) is not streamed, as when left out', () => {
  it('Chat Completions and Responses: served (200), recorded not streamed; include_usage: null is taken too', async () => {
    const r = await send(chat({ stream: null, stream_options: { include_usage: null } }));
    expect(r.status, r.text).toBe(200);
    expect(r.upstream).toMatchObject({ stream: null });
    expect(gw.store.calls.at(-1)).toMatchObject({ httpStatus: 200, streamed: false, inputTokens: 10, outputTokens: 5, usageKnown: true });
    const before = gw.up.seen.length;
    const res = await gw.post('/v1/responses', { model: 'gpt-4o', input: 'hi', stream: null });
    expect(res.status, await res.text()).toBe(200);
    expect(JSON.parse(gw.up.seen[before]!.body)).toMatchObject({ stream: null });
    expect(gw.store.calls.at(-1)).toMatchObject({ httpStatus: 200, streamed: false });
  });
});
