/**
 * A call the gateway answered after retrying its upstream is logged (`gateway: upstream
 * retried`, info: job, upstream calls, the status answered) on every route: the Anthropic
 * route said so, Chat Completions and Responses said nothing (a fresh tester saw only the final
 * status). Gateway over node:http, memory store, 2 retries 1 ms apart, an upstream answering 500.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../core/log.js';
import { forFile, startGateway } from './test-server.js';

const lines: string[] = [];
const RETRY = { retry: { retries: 2, baseMs: 1, maxDelayMs: 10 } };
const gw = forFile(() =>
  startGateway({
    upstream: () => ({ status: 500, body: JSON.stringify({ error: { type: 'api_error', message: 'boom' } }) }),
    job: { token: 'flj_retried_log_0123456789abcdefg', id: 31, budgetMicros: 5_000_000 },
    openai: 'openai-compatible',
    config: RETRY,
    log: createLogger('info', (l) => void lines.push(l)),
  }),
);

const retried = () => lines.filter((l) => l.includes('upstream retried')).map((l) => l.replace(/^\S+ /, '').trim());

describe('gateway: upstream retried is logged on every route', () => {
  it.each([
    ['/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/chat/completions', { model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/responses', { model: 'gpt-4o', max_output_tokens: 100, input: 'hi' }],
  ])('%s: 3 upstream calls, one line', async (path, body) => {
    lines.length = 0;
    const res = await gw.post(path, body);
    expect(res.status).toBe(500);
    expect(retried()).toEqual(['info gateway: upstream retried job=31 calls=3 status=500']);
  });
});
