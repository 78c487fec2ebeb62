import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../store/test-pg.js';
import { startTestServer, type TestServer } from '../test-helpers.js';
import type { CreatedReceiver, HookResult, Task } from '../../protocol/index.js';
import { giteaSignature, githubExample, postGithub } from './hook-test-util.js';
import { MAX_HOOK_BODY_BYTES } from './receive.js';

// The webhook transport (hooks-node.ts: plain node:http) and what concurrent deliveries answer
// (ingest-batcher.ts groups them into one transaction).
const pg: TestDatabase | null = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});
const engines = [{ name: 'SQLite', url: undefined as string | undefined }, ...(pg ? [{ name: 'PostgreSQL', url: pg.url }] : [])];

describe.each(engines)('webhook transport and repeats ($name)', ({ url }) => {
  let t: TestServer;
  let gh: CreatedReceiver;
  beforeAll(async () => {
    t = await startTestServer({ ...(url ? { databaseUrl: url } : {}), taskPollMs: 100 });
    gh = (await (await t.api('/api/receivers', { json: { name: 'gh', provider: 'github' } })).json()) as CreatedReceiver;
  });
  afterAll(() => t.close());
  const issueKey = (n: number) => `github.com/acme/node/issues/${n}`;
  const comment = (n: number, body: string) => {
    const p = githubExample('issue_comment', 'created');
    Object.assign(p.issue as Record<string, unknown>, { html_url: `https://github.com/acme/node/issues/${n}`, number: n });
    (p.comment as Record<string, unknown>).body = body;
    return JSON.stringify(p);
  };
  const post = async (raw: string, delivery: string) => {
    const res = await postGithub(`${t.url}/hooks/github/gh`, gh.secret, 'issue_comment', raw, { delivery });
    expect(res.status).toBe(200);
    return (await res.json()) as HookResult;
  };
  const newTask = async (n: number) => ((await (await t.api('/api/tasks', { json: { agent: 'gpu-job', keys: [issueKey(n)], coalesceSeconds: 60 } })).json()) as Task).id;
  const eventsOf = async (taskId: number | null) => (await t.store.listTaskEvents(taskId, 1000)).filter((e) => e.key?.startsWith('github.com/acme/node/'));

  it('a repeated delivery answers the task the first one went to (and null after an unmatched one)', async () => {
    const owner = await newTask(1);
    const first = await post(comment(1, 'once'), 'rep-1');
    expect([first.outcome, first.taskId]).toEqual(['woke', owner]);
    expect(await post(comment(1, 'once'), 'rep-1')).toEqual({ outcome: 'duplicate', taskId: owner, key: issueKey(1) });
    const lost = await post(comment(999, 'nobody'), 'rep-2');
    expect([lost.outcome, lost.taskId]).toEqual(['unmatched', null]);
    expect(await post(comment(999, 'nobody'), 'rep-2')).toEqual({ outcome: 'duplicate', taskId: null, key: issueKey(999) });
    expect((await eventsOf(owner)).length).toBe(1);
  });

  it('40 deliveries at once, 10 of them repeats of others: 30 stored, each repeat answers its twin\'s task, all 200', async () => {
    const tasks = [await newTask(10), await newTask(11), await newTask(12)];
    const sends = Array.from({ length: 40 }, (_, i) => {
      const n = i % 30; // 30..39 repeat 0..9
      return { n, p: post(comment(10 + (n % 3), `burst ${n}`), `burst-${n}`) };
    });
    const got = await Promise.all(sends.map(async (s) => ({ n: s.n, r: await s.p })));
    for (let n = 0; n < 10; n++) {
      const twins = got.filter((g) => g.n === n).map((g) => g.r);
      expect(twins.filter((r) => r.outcome === 'duplicate').length).toBe(1);
      expect(twins.map((r) => r.taskId)).toEqual([tasks[n % 3], tasks[n % 3]]);
    }
    expect(got.filter((g) => g.r.outcome === 'duplicate').length).toBe(10);
    for (const g of got) expect(g.r.taskId).toBe(tasks[g.n % 3]);
    expect(await Promise.all(tasks.map(async (id) => (await eventsOf(id)).length))).toEqual([10, 10, 10]);
  });

  it('a signed body nested 200,000 levels deep → 400 invalid_json naming the limit, nothing stored; no X-GitHub-Delivery → 400', async () => {
    const before = (await eventsOf(null)).length;
    const deep = '{"k":' + '['.repeat(200_000) + ']'.repeat(200_000) + '}';
    const res = await postGithub(`${t.url}/hooks/github/gh`, gh.secret, 'issue_comment', deep, { delivery: 'deep-1' });
    expect([res.status, await res.json()]).toEqual([400, { error: { code: 'invalid_json', message: 'webhook body must be a JSON document (JSON nested deeper than 128 levels)' } }]);
    const noId = await fetch(`${t.url}/hooks/github/gh`, { method: 'POST', headers: { 'x-github-event': 'issue_comment', 'x-hub-signature-256': `sha256=${giteaSignature(gh.secret, comment(1, 'no id'))}` }, body: comment(1, 'no id') });
    expect([noId.status, ((await noId.json()) as { error: { message: string } }).error.message]).toEqual([400, 'missing X-GitHub-Delivery header (GitHub sends one with every delivery)']);
    expect((await eventsOf(null)).length).toBe(before);
    // the API's JSON bodies have the same bound
    const api = await t.api('/api/tasks', { method: 'POST', body: '{"agent":' + '['.repeat(5000) + ']'.repeat(5000) + '}' });
    expect([api.status, ((await api.json()) as { error: { message: string } }).error.message]).toEqual([400, 'request body must be a JSON document (JSON nested deeper than 128 levels)']);
  });

  it('NUL (U+0000), which PostgreSQL text cannot hold: API bodies and URLs → 400 naming where; a forge payload is kept with U+FFFD', async () => {
    const api = await t.api('/api/tasks', { json: { agent: 'gpu-job', keys: ['k\u0000z'] } });
    expect([api.status, await api.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'keys.0: text must not contain NUL (U+0000)', field: 'keys.0' } }]);
    const signIn = await fetch(`${t.url}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-flotilla-csrf': '1' }, body: JSON.stringify({ name: 'a\u0000b', password: 'whatever-password' }) });
    expect(signIn.status).toBe(400);
    const query = await t.api('/api/jobs?agent=a%00b');
    expect([query.status, ((await query.json()) as { error: { message: string } }).error.message]).toEqual([400, 'the URL must not contain NUL (%00)']);
    const owner = await newTask(77);
    const res = await post(comment(77, 'binary\u0000tail'), 'nul-1');
    expect([res.outcome, res.taskId]).toEqual(['woke', owner]);
    expect((await eventsOf(owner))[0]!.summary).toContain('binary\uFFFDtail');
  });

  it('a body over the limit → 413 (declared or streamed), nothing stored; other paths are not hooks', async () => {
    const before = (await eventsOf(null)).length;
    const big = comment(998, 'x'.repeat(MAX_HOOK_BODY_BYTES));
    const declared = await postGithub(`${t.url}/hooks/github/gh`, gh.secret, 'issue_comment', big, { delivery: 'big-1' });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: { code: 'payload_too_large', message: `webhook body is larger than ${MAX_HOOK_BODY_BYTES} bytes` } });
    // Streamed without a Content-Length (chunked): refused once the bytes pass the limit.
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = request(`${t.url}/hooks/github/gh`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'issue_comment', 'x-github-delivery': 'big-2' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 6; i++) req.write(Buffer.alloc(1024 * 1024, 0x20));
      req.end();
    });
    expect(streamed).toBe(413);
    expect((await eventsOf(null)).length).toBe(before);
    const unknown = await fetch(`${t.url}/hooks/svn/gh`, { method: 'POST', body: '{}' });
    expect([unknown.status, ((await unknown.json()) as { error: { message: string } }).error.message]).toEqual([404, 'no hook provider "svn" (github, gitea, generic)']);
    const opened = await fetch(`${t.url}/hooks/github/gh`);
    expect([opened.status, opened.headers.get('allow'), ((await opened.json()) as { error: { code: string } }).error.code]).toEqual([405, 'POST', 'method_not_allowed']);
    const deeper = await fetch(`${t.url}/hooks/github/gh/extra`, { method: 'POST', body: '{}' });
    expect([deeper.status, ((await deeper.json()) as { error: { code: string } }).error.code]).toEqual([404, 'not_found']);
  });
});
