import { describe, expect, it } from 'vitest';
import { decodePendingCall, encodePendingCall } from './pending-call.js';
import type { PendingCall } from './types.js';

/** The reservation row's JSON as JSON.stringify writes it: the fields in PendingCall's order, runnerId null when absent, webSearchRequests only when above 0. */
const reference = (c: PendingCall): string =>
  JSON.stringify({ jobId: c.jobId, attempt: c.attempt, provider: c.provider, model: c.model, api: c.api, streamed: c.streamed, runnerId: c.runnerId ?? null, inputTokens: c.inputTokens, outputTokens: c.outputTokens, ...(c.webSearchRequests ? { webSearchRequests: c.webSearchRequests } : {}) });

describe('encodePendingCall', () => {
  const base: PendingCall = { jobId: 12, attempt: 0, provider: 'anthropic', model: 'claude-haiku-4-5', api: 'anthropic-messages', streamed: false, runnerId: 3, inputTokens: 27, outputTokens: 64 };
  it('writes the text JSON.stringify would, and reads back as the call', () => {
    const calls: PendingCall[] = [
      base,
      { ...base, runnerId: null },
      { ...base, runnerId: undefined, streamed: true },
      { ...base, webSearchRequests: 0 },
      { ...base, webSearchRequests: 5 },
      { ...base, model: 'we"ird\\model\n\u001fé日本\ud83d\ude00', provider: 'openai-compatible', api: 'openai-chat' },
      { ...base, inputTokens: 2 ** 53 - 1, outputTokens: 1_000_000 },
    ];
    for (const c of calls) {
      const text = encodePendingCall(c)!;
      expect(text).toBe(reference(c));
      expect(decodePendingCall(text)).toEqual({ ...c, runnerId: c.runnerId ?? null, ...(c.webSearchRequests ? {} : { webSearchRequests: undefined }) });
    }
    // NUL is escaped as JSON.stringify escapes it (decodePendingCall refuses such a name: PostgreSQL cannot store it)
    const nul = { ...base, model: 'a\u0000b' };
    expect(encodePendingCall(nul)).toBe(reference(nul));
    expect(encodePendingCall(undefined)).toBeNull();
  });

  it('a call not of the gateway\'s shape is still written as JSON.stringify writes it', () => {
    const odd = { ...base, inputTokens: undefined, outputTokens: NaN } as unknown as PendingCall;
    expect(encodePendingCall(odd)).toBe(reference(odd));
    expect(encodePendingCall(odd)).toBe('{"jobId":12,"attempt":0,"provider":"anthropic","model":"claude-haiku-4-5","api":"anthropic-messages","streamed":false,"runnerId":3,"outputTokens":null}');
  });
});
