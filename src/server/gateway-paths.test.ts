/**
 * A `/v1/*` path no route serves, through the control plane's HTTP server: a 404 in the asking
 * client's wire format (gateway/errors.ts noSuchEndpoint) — OpenAI's for a Bearer-only client on
 * a path both providers have (`/v1/files`, `/v1/batches`), Anthropic's when it sends
 * `anthropic-version` — and a path spelt `//v1/…` or `/V1/…` (a base URL ending in `/`) reaches
 * the gateway too, whose 404 says how to mend it, not the control plane's `no route` (fresh-tester
 * findings).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({});
});
afterAll(async () => {
  await t.close();
});

const HINT = " (paths have single slashes, no trailing or encoded ones, and are lower case: check the client's base URL)";

async function call(method: string, path: string, headers: Record<string, string>): Promise<[number, unknown]> {
  const res = await fetch(t.url + path, { method, headers: { 'content-type': 'application/json', ...headers }, ...(method === 'POST' ? { body: '{}' } : {}) });
  return [res.status, await res.json()];
}

describe('unknown gateway paths', () => {
  it('paths both providers have: OpenAI shape for a Bearer-only client, Anthropic shape with anthropic-version', async () => {
    expect(await call('GET', '/v1/files', { authorization: 'Bearer flj_x' })).toEqual([404, { error: { message: 'no such endpoint: GET /v1/files', type: 'invalid_request_error', param: null, code: null } }]);
    expect(await call('POST', '/v1/batches', { authorization: 'Bearer flj_x' })).toEqual([404, { error: { message: 'no such endpoint: POST /v1/batches', type: 'invalid_request_error', param: null, code: null } }]);
    expect(await call('GET', '/v1/files', { 'x-api-key': 'flj_x', 'anthropic-version': '2023-06-01' })).toEqual([404, { type: 'error', error: { type: 'not_found_error', message: 'no such endpoint: GET /v1/files' } }]);
  });

  it('a doubled slash or capitals reach the gateway, whose 404 names the mistake in the wire format of the path meant', async () => {
    expect(await call('POST', '//v1/messages', { 'x-api-key': 'flj_x' })).toEqual([404, { type: 'error', error: { type: 'not_found_error', message: `no such endpoint: POST //v1/messages${HINT}` } }]);
    expect(await call('POST', '/V1/chat/completions', { authorization: 'Bearer flj_x' })).toEqual([404, { error: { message: `no such endpoint: POST /V1/chat/completions${HINT}`, type: 'invalid_request_error', param: null, code: null } }]);
    // an encoded slash (fresh tester: the control plane's own error shape answered it)
    expect(await call('POST', '/v1%2fmessages', { 'x-api-key': 'flj_x' })).toEqual([404, { type: 'error', error: { type: 'not_found_error', message: `no such endpoint: POST /v1%2fmessages${HINT}` } }]);
    // a doubled slash inside, a trailing one (second fresh tester: only a leading // got the hint)
    expect(await call('POST', '/v1//messages', { 'x-api-key': 'flj_x' })).toEqual([404, { type: 'error', error: { type: 'not_found_error', message: `no such endpoint: POST /v1//messages${HINT}` } }]);
    expect(await call('POST', '/v1/chat/completions/', { authorization: 'Bearer flj_x' })).toEqual([404, { error: { message: `no such endpoint: POST /v1/chat/completions/${HINT}`, type: 'invalid_request_error', param: null, code: null } }]);
    // the control plane's own paths are left to it
    const api = await fetch(`${t.url}/api/nothing-here`, { headers: { authorization: `Bearer ${t.admin}` } });
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});
