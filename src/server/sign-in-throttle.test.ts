import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADDRESS_POLICY, SignInThrottle, USER_POLICY, retryAfterSeconds, userKey } from './sign-in-throttle.js';
import { startTestServer, type TestServer } from './test-helpers.js';

const T0 = 1_800_000_000_000;

describe('SignInThrottle', () => {
  it('locks a key at the 5th failure for 30 s, then doubles per failure up to 15 min; quiet for 15 min starts afresh', () => {
    const th = new SignInThrottle();
    const k = userKey('Ada');
    expect(k).toBe('user:ada');
    for (let i = 0; i < 4; i++) th.fail([[k, USER_POLICY]], T0 + i);
    expect(th.retryAfterMs([k], T0 + 4)).toBe(0);
    th.fail([[k, USER_POLICY]], T0 + 10);
    expect(th.retryAfterMs([k], T0 + 10)).toBe(30_000);
    expect(th.retryAfterMs([k], T0 + 10 + 30_000)).toBe(0);
    th.fail([[k, USER_POLICY]], T0 + 40_000); // 6th: 60 s
    expect(th.retryAfterMs([k], T0 + 40_000)).toBe(60_000);
    let t = T0 + 40_000;
    for (let n = 7; n <= 12; n++) {
      t += 60_000; // within the window (fail() counts whatever the lock; the route checks it first)
      th.fail([[k, USER_POLICY]], t);
    }
    // 12th failure: 30 s × 2^7 = 3840 s, capped at 15 min.
    expect(th.retryAfterMs([k], t)).toBe(15 * 60_000);
    // 15 min without a failure after the lock: a new failure counts as the first.
    t += 15 * 60_000 + 15 * 60_000 + 1;
    th.fail([[k, USER_POLICY]], t);
    expect(th.retryAfterMs([k], t)).toBe(0);
  });

  it('the wait is the longest of the keys asked; reset clears one key; memory stays bounded', () => {
    const th = new SignInThrottle(3);
    for (let i = 0; i < 5; i++) th.fail([['user:a', USER_POLICY], ['addr:x', ADDRESS_POLICY]], T0);
    expect(th.retryAfterMs(['user:a', 'addr:x'], T0 + 1000)).toBe(29_000);
    th.reset('user:a');
    expect(th.retryAfterMs(['user:a', 'addr:x'], T0 + 1000)).toBe(0);
    for (const k of ['user:b', 'user:c', 'user:d']) th.fail([[k, USER_POLICY]], T0 + 2000);
    expect(th.size).toBe(3);
    expect(retryAfterSeconds(29_001)).toBe(30);
    expect(retryAfterSeconds(1)).toBe(1);
  });
});

async function signIn(t: TestServer, name: string, password: string): Promise<Response> {
  return fetch(t.url + '/api/session', { method: 'POST', headers: { 'content-type': 'application/json', 'x-flotilla-csrf': '1' }, body: JSON.stringify({ name, password }) });
}

async function failure(res: Response): Promise<[number, string | null, string, string]> {
  const body = (await res.json()) as { error: { code: string; message: string } };
  return [res.status, res.headers.get('retry-after'), body.error.code, body.error.message];
}

describe('POST /api/session throttling', () => {
  let t: TestServer;
  let now = T0;
  beforeAll(async () => {
    t = await startTestServer({ now: () => now });
    for (const json of [
      { name: 'ada', role: 'admin', password: 'right-password-1' },
      { name: 'bob', role: 'member', password: 'right-password-2' },
    ]) {
      expect((await t.api('/api/users', { json })).status).toBe(201);
    }
  });
  afterAll(() => t.close());

  it('5 wrong passwords → 401 each, then 429 with Retry-After even for the right one; the same for a name nobody has', async () => {
    for (const name of ['ada', 'nobody']) {
      for (let i = 0; i < 5; i++) expect(await failure(await signIn(t, name, 'wrong-password'))).toEqual([401, null, 'bad_credentials', 'wrong user name or password']);
      expect(await failure(await signIn(t, name, 'right-password-1'))).toEqual([429, '30', 'too_many_attempts', 'too many failed sign-ins: try again in 30 s']);
    }
    now += 10_000;
    expect((await signIn(t, 'ADA', 'right-password-1')).headers.get('retry-after')).toBe('20');
    now += 20_000;
    // Lock over: the right password works, and the count starts afresh.
    expect((await signIn(t, 'ada', 'right-password-1')).status).toBe(200);
    expect((await signIn(t, 'ada', 'wrong-password')).status).toBe(401);
  });

  it('a success resets the user count: 4 wrong, right, 4 wrong are all answered', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await signIn(t, 'bob', 'wrong-password')).status);
    codes.push((await signIn(t, 'bob', 'right-password-2')).status);
    for (let i = 0; i < 4; i++) codes.push((await signIn(t, 'bob', 'wrong-password')).status);
    expect(codes).toEqual([401, 401, 401, 401, 200, 401, 401, 401, 401]);
  });

  it('per client address: the 20th failure within the window locks every name from that address', async () => {
    // So far from 127.0.0.1: 5 + 5 + 1 + 8 = 19 failures (a success does not clear the address).
    expect((await signIn(t, 'carol', 'wrong-password')).status).toBe(401);
    expect(await failure(await signIn(t, 'dave', 'whatever-password'))).toEqual([429, '30', 'too_many_attempts', 'too many failed sign-ins: try again in 30 s']);
  });
});
