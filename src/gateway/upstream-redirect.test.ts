/**
 * A provider answering a redirect (fresh-user finding): passed on as it came, a client that
 * follows it (Node's fetch does, for a 307 of a POST) sent the job's token and the whole prompt to
 * the Location's host. Every route answers a 502 in its wire format instead, without the
 * Location, naming the status, the origin and the base-URL setting; the call is one ledger row at
 * the upstream's status, $0 (the provider served nothing). Real HTTP, fake upstream, memory store.
 */
import { describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';

const TOKEN = 'flj_redirect_0123456789abcdefghijk';
const gw = forFile(() =>
  startGateway({
    upstream: (req) => ({ status: req.url.includes('count_tokens') ? 301 : 307, headers: { location: 'http://127.0.0.2:18902/v1/messages?key=secret', 'content-type': 'text/plain' }, body: 'moved' }),
    job: { token: TOKEN, id: 9, budgetMicros: 5_000_000 },
    openai: 'openai',
  }),
);

const ANTHROPIC = 'the model provider (anthropic) answered HTTP 307 with a redirect to http://127.0.0.2:18902; the gateway follows no redirect (it would send the server\'s key elsewhere): an admin should check ANTHROPIC_BASE_URL in the server\'s environment';
const OPENAI = ANTHROPIC.replace('(anthropic)', '(openai)').replace('ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL');

describe('an upstream redirect', () => {
  it.each([
    ['/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }, { type: 'error', error: { type: 'api_error', message: ANTHROPIC } }],
    ['/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'x' }] }, { type: 'error', error: { type: 'api_error', message: ANTHROPIC } }],
    ['/v1/messages/count_tokens', { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'x' }] }, { type: 'error', error: { type: 'api_error', message: ANTHROPIC.replace('307', '301') } }],
    ['/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }, { error: { type: 'server_error', code: 'upstream_redirect', message: OPENAI, param: null } }],
    ['/v1/responses', { model: 'gpt-4o', input: 'x' }, { error: { type: 'server_error', code: 'upstream_redirect', message: OPENAI, param: null } }],
  ])('%s → 502 in its wire format, no Location; one $0 row at the upstream status', async (path, body, error) => {
    gw.reset();
    const res = await gw.post(path, body);
    expect(res.status).toBe(502);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await res.json()).toEqual(error);
    expect(gw.up.seen).toHaveLength(1); // not followed, not retried
    await expect.poll(() => gw.store.calls.length, { timeout: 2_000 }).toBe(1);
    expect(gw.store.calls[0]).toMatchObject({ httpStatus: path.includes('count_tokens') ? 301 : 307, costMicros: 0, inputTokens: 0, outputTokens: 0, usageKnown: true });
  });
});
