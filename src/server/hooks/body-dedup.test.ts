import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../store/test-pg.js';
import { startTestServer, type TestServer } from '../test-helpers.js';
import type { CreatedReceiver, HookResult } from '../../protocol/index.js';
import { BODY_DEDUP_WINDOW_MS } from './receive.js';

// A fresh user posted `{"groupKey":"z","status":"firing"}` twice to a generic receiver (no
// delivery id header): the second was a `duplicate`, and so would be every later identical
// event, for good (the id was the body's SHA-256 alone). A sender's retry must still count once.

const pg: TestDatabase | null = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

const engines = [{ name: 'SQLite', url: undefined as string | undefined }, ...(pg ? [{ name: 'PostgreSQL', url: pg.url }] : [])];

describe.each(engines)('generic receiver without a delivery id ($name)', ({ url }) => {
  let t: TestServer;
  let am: CreatedReceiver;
  // The server's clock: in the middle of a 10-minute slot, so +1 min stays in it.
  let clock = 1_800_000_000_000 - (1_800_000_000_000 % BODY_DEDUP_WINDOW_MS) + BODY_DEDUP_WINDOW_MS / 2;
  beforeAll(async () => {
    t = await startTestServer({ ...(url ? { databaseUrl: url } : {}), now: () => clock });
    const res = await t.api('/api/receivers', { json: { name: 'am', provider: 'generic', auth: 'bearer', keyExpr: 'payload.groupKey' } });
    expect(res.status).toBe(201);
    am = (await res.json()) as CreatedReceiver;
  });
  afterAll(() => t.close());

  const post = async (body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${t.url}/hooks/generic/am`, { method: 'POST', headers: { authorization: `Bearer ${am.secret}`, 'content-type': 'application/json', ...headers }, body });
    expect(res.status).toBe(200);
    return ((await res.json()) as HookResult).outcome;
  };

  it('the same body: once within its 10-minute slot (a retry), again after it (the alert fired again)', async () => {
    const body = JSON.stringify({ groupKey: 'z', status: 'firing' });
    expect(await post(body)).toBe('unmatched');
    clock += 60_000; // a retry a minute later
    expect(await post(body)).toBe('duplicate');
    clock += BODY_DEDUP_WINDOW_MS; // the same alert, firing again later
    expect(await post(body)).toBe('unmatched');
    expect(await post(body)).toBe('duplicate');
    // another body in the same slot is its own event
    expect(await post(JSON.stringify({ groupKey: 'z', status: 'resolved' }))).toBe('unmatched');
  });

  it('an X-Delivery-Id header still decides alone, whatever the clock says', async () => {
    const body = JSON.stringify({ groupKey: 'y', status: 'firing' });
    expect(await post(body, { 'x-delivery-id': 'am-7' })).toBe('unmatched');
    clock += 3 * BODY_DEDUP_WINDOW_MS;
    expect(await post(body, { 'x-delivery-id': 'am-7' })).toBe('duplicate');
  });
});
