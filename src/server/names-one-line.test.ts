import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiTokenInfo } from '../protocol/index.js';
import { startTestServer, type TestServer } from './test-helpers.js';

/**
 * Names people see in listings are one line of printable text: an API token name (`POST
 * /api/tokens`) with a control character, U+2028 or U+2029 is refused 400 naming the field `name`
 * and the character, and nothing is stored; so are a runner name and a registration token's labels.
 */
describe('names shown in listings', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  const tokenNames = async () => ((await (await t.api('/api/tokens')).json()) as { tokens: ApiTokenInfo[] }).tokens.map((x) => x.name);

  it('an API token name with a control character or a line separator: 400 naming `name`, no token made', async () => {
    const before = await tokenNames();
    const cases: Array<[string, string]> = [
      ['ci\u001b[2Jboom', 'an escape (ESC) (U+001B)'],
      ['ci\nadmin', 'a newline (U+000A)'],
      ['ci\u2028x', 'U+2028'],
      ['ci\u2029x', 'U+2029'],
      ['ci\u0085x', 'U+0085'],
      ['ci\u007fx', 'U+007F'],
    ];
    for (const [name, what] of cases) {
      const res = await t.api('/api/tokens', { method: 'POST', json: { name, role: 'member' } });
      expect(res.status, JSON.stringify(name)).toBe(400);
      expect(await res.json()).toEqual({ error: { code: 'invalid_request', field: 'name', message: `name: must be one line of printable text: found ${what} (it is shown in listings)` } });
    }
    expect(await tokenNames()).toEqual(before);
    // A plain one, with spaces around: stored trimmed.
    const ok = await t.api('/api/tokens', { method: 'POST', json: { name: '  ci bot – ünïcode  ', role: 'member' } });
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as ApiTokenInfo).name).toBe('ci bot – ünïcode');
  });

  it('a runner name and a registration token label with a control character are refused too', async () => {
    const reg = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(), name: 'box\u001b[31m', labels: {} } });
    expect(reg.status).toBe(400);
    expect(await reg.json()).toMatchObject({ error: { code: 'invalid_request', field: 'name' } });
    const tok = await t.api('/api/runner-tokens', { method: 'POST', json: { labels: { zone: 'eu\u2028west' } } });
    expect(tok.status).toBe(400);
    expect(await tok.json()).toMatchObject({ error: { code: 'invalid_request', field: 'labels.zone' } });
  });
});
