import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../store/test-pg.js';
import { startTestServer, type TestServer } from '../test-helpers.js';
import type { CreatedReceiver, HookResult, Task } from '../../protocol/index.js';

// Fresh-user faults (FX2): agents that cannot run tasks, empty values, long names, huge keys.
const pg: TestDatabase | null = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});
const engines = [{ name: 'SQLite', url: undefined as string | undefined }, ...(pg ? [{ name: 'PostgreSQL', url: pg.url }] : [])];

describe.each(engines)('task and receiver input checks ($name)', ({ url }) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ ...(url ? { databaseUrl: url } : {}), taskPollMs: 100 });
  });
  afterAll(() => t.close());
  const err = async (res: Response) => (await res.json()) as { error: { code: string; message: string; field?: string } };

  it('refuses a task of an agent whose inputSchema cannot take taskPrompt/taskId/taskTurn (422, nothing stored); issue-worker is accepted', async () => {
    const before = (await t.store.listTasks({ limit: 200 })).length;
    const res = await t.api('/api/tasks', { json: { agent: 'test-fixer', prompt: 'fix it' } });
    expect(res.status).toBe(422);
    const e = await err(res);
    expect(e.error.code).toBe('invalid_input');
    expect(e.error.message).toContain('agent test-fixer cannot run tasks');
    expect(e.error.message).toContain('must allow taskPrompt (string), taskId and taskTurn');
    expect((await t.store.listTasks({ limit: 200 })).length).toBe(before);
    const ok = await t.api('/api/tasks', { json: { agent: 'issue-worker', title: 'fx2' } });
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as Task).agent).toBe('issue-worker');
  });

  it('refuses a receiver whose assign policy names such an agent, or an empty login/agent; says the name length limit', async () => {
    const bad = await t.api('/api/receivers', { json: { name: 'fx-a', provider: 'github', policies: { assign: { login: 'my-bot', agent: 'test-fixer' } } } });
    expect(bad.status).toBe(422);
    expect((await err(bad)).error.field).toBe('policies.assign.agent');
    const empty = await t.api('/api/receivers', { json: { name: 'fx-b', provider: 'github', policies: { assign: { login: '', agent: 'issue-worker' } } } });
    expect(empty.status).toBe(400);
    expect((await err(empty)).error.message).toContain('must not be empty');
    const blank = await t.api('/api/receivers', { json: { name: 'fx-c', provider: 'github', policies: { assign: { login: 'my-bot', agent: '  ' } } } });
    expect(blank.status).toBe(400);
    const long = await t.api('/api/receivers', { json: { name: 'a'.repeat(5000), provider: 'github' } });
    expect(long.status).toBe(400);
    expect((await err(long)).error.message).toContain('at most 63 characters');
    expect((await t.store.listReceivers()).map((r) => r.name).filter((n) => n.startsWith('fx-') || n.length > 63)).toEqual([]);
    const good = await t.api('/api/receivers', { json: { name: 'fx-d', provider: 'github', policies: { assign: { login: 'my-bot', agent: 'issue-worker' } } } });
    expect(good.status).toBe(201);
    expect(((await good.json()) as CreatedReceiver).receiver.policies.assign).toEqual({ login: 'my-bot', agent: 'issue-worker' });
  });

  it('refuses a title with control characters (an escape sequence, a newline), naming it; nothing stored', async () => {
    // a fresh tester's title "evil\nline2 \x1b[31mRED" was stored, and each listing showed it differently
    const before = (await t.store.listTasks({ limit: 1000 })).length;
    for (const [title, found] of [['evil\nline2', 'a newline (U+000A)'], ['\u001b[31mRED\u001b[0m', 'an escape (ESC) (U+001B)']] as const) {
      const res = await t.api('/api/tasks', { json: { agent: 'issue-worker', title } });
      expect(res.status).toBe(400);
      const body = await err(res);
      expect([body.error.field, body.error.message]).toEqual(['title', `title: must be one line of printable text: found ${found} (it is shown in listings)`]);
    }
    expect((await t.store.listTasks({ limit: 1000 })).length).toBe(before);
  });

  it('refuses an empty or blank prompt at create and send', async () => {
    for (const prompt of ['', '   ']) {
      const res = await t.api('/api/tasks', { json: { agent: 'issue-worker', prompt } });
      expect(res.status).toBe(400);
      expect((await err(res)).error.field).toBe('prompt');
    }
    const created = (await (await t.api('/api/tasks', { json: { agent: 'issue-worker' } })).json()) as Task;
    const send = await t.api(`/api/tasks/${created.id}/send`, { json: { prompt: ' ' } });
    expect(send.status).toBe(400);
    expect((await t.store.getTask(created.id))?.status).toBe('idle');
  });

  it('a generic delivery whose routed key is over 1000 chars is refused (422), stored nowhere and not echoed', async () => {
    const fallback = (await (await t.api('/api/tasks', { json: { agent: 'issue-worker', title: 'fallback' } })).json()) as Task;
    const rec = (await (await t.api('/api/receivers', { json: { name: 'fx-alerts', provider: 'generic', auth: 'bearer', keyExpr: 'payload.groupKey', fallbackTaskId: fallback.id } })).json()) as CreatedReceiver;
    const post = (groupKey: string) =>
      fetch(`${t.url}/hooks/generic/fx-alerts`, { method: 'POST', headers: { authorization: `Bearer ${rec.secret}`, 'content-type': 'application/json', 'x-delivery-id': 'd-1' }, body: JSON.stringify({ groupKey, status: 'firing' }) });
    const huge = 'k'.repeat(100_000);
    const res = await post(huge);
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text).toContain('the routed resource key is 100000 characters; keys are at most 1000');
    expect(text.length).toBeLessThan(1000);
    expect(await t.store.listTaskEvents(fallback.id, 50)).toEqual([]);
    // 1000 chars pass; the same delivery id was not stored, so this is no duplicate.
    const ok = await post('k'.repeat(1000));
    expect(ok.status).toBe(200);
    const r = (await ok.json()) as HookResult;
    expect([r.outcome === 'duplicate', r.key?.length]).toEqual([false, 1000]);
  });
});
