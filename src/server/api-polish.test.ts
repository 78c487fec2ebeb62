/**
 * A fresh user's reports, through the HTTP API: unknown query parameters on paged lists,
 * runner names and roles at registration, holds extended without a reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiErrorBody, Runner } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

let t: TestServer;
const fakes: FakeRunner[] = [];
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await t.close();
});

async function refused(res: Response): Promise<[number, string, string, string | undefined]> {
  const e = ((await res.json()) as ApiErrorBody).error;
  return [res.status, e.code, e.message, e.field];
}

describe('paged lists refuse unknown query parameters', () => {
  it('?cursor=garbage → 400 invalid_request naming cursor, and saying the list pages with before', async () => {
    expect(await refused(await t.api('/api/jobs?cursor=garbage'))).toEqual([
      400,
      'invalid_request',
      'cursor: unknown query parameter: this list pages with before (the id the previous page ends at) (this endpoint takes status, agent, runner, from, to, limit, before)',
      'cursor',
    ]);
    expect(await refused(await t.api('/api/tasks?cursor=2'))).toEqual([
      400,
      'invalid_request',
      'cursor: unknown query parameter: this list pages with before (the id the previous page ends at) (this endpoint takes status, limit, before)',
      'cursor',
    ]);
    expect(await refused(await t.api('/api/jobs/1/events/page?after=3'))).toEqual([400, 'invalid_request', 'after: unknown query parameter (this endpoint takes before, limit)', 'after']);
    expect(await refused(await t.api('/api/tasks/1/conversation?page=2'))).toEqual([400, 'invalid_request', 'page: unknown query parameter (this endpoint takes limit, before)', 'page']);
    expect(await refused(await t.api('/api/runners/1/activity?cursor=x'))).toEqual([400, 'invalid_request', 'cursor: unknown query parameter (this endpoint takes limit)', 'cursor']);
    // The known ones still work.
    expect((await t.api('/api/jobs?limit=5&before=10')).status).toBe(200);
  });
});

describe('POST /api/runners/register checks the name and the role', () => {
  it('a name with a space or a slash, and a role label with a space → 400 naming the field; the token is not used up', async () => {
    const token = await t.regToken();
    const register = (body: Record<string, unknown>) => t.api('/api/runners/register', { token: null, json: { token, ...body } });
    expect(await refused(await register({ name: 'bad name/../x' }))).toEqual([
      400,
      'invalid_request',
      'name: a runner name must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit',
      'name',
    ]);
    expect(await refused(await register({ name: 'x'.repeat(64) }))).toMatchObject([400, 'invalid_request', expect.stringMatching(/^name: a runner name must be 1-63/), 'name']);
    expect(await refused(await register({ name: 'box-1', labels: { role: 'bad role' } }))).toEqual([
      400,
      'invalid_request',
      'labels.role: a role must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit',
      'labels.role',
    ]);
    const ok = await register({ name: 'box-1.example_a', labels: { role: 'build' } });
    expect(ok.status).toBe(201);
    // A registration token cannot carry a bad role either (it would bind it to the runner).
    expect(await refused(await t.api('/api/runner-tokens', { json: { labels: { role: 'x/y' } } }))).toEqual([
      400,
      'invalid_request',
      'labels.role: a role must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit',
      'labels.role',
    ]);
  });
});

describe('one rule for roles on runners, runs and agents', () => {
  it('a run asks for role Build (a runner may register with it): accepted and stored as the runner would have it; a bad one named', async () => {
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, role: 'Build.x_1', labels: { nosuch: 'label' } } });
    expect(res.status).toBe(201);
    const job = (await res.json()) as { id: number; selector: Record<string, string> };
    expect(job.selector).toMatchObject({ role: 'Build.x_1' });
    expect((await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
    expect(await refused(await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, role: 'a b' } }))).toEqual([
      400,
      'invalid_request',
      'role: a role must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit',
      'role',
    ]);
    // The same rule for a role given as a label.
    expect(await refused(await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { role: 'bad role' } } }))).toEqual([
      400,
      'invalid_request',
      'labels.role: a role must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit',
      'labels.role',
    ]);
  });
});

describe('POST /api/runners/:id/hold without a reason', () => {
  it('a new hold needs a reason (400, field reason); extend keeps the current one unless given a new one', async () => {
    const r = await FakeRunner.start(t, { name: 'held-box' });
    fakes.push(r);
    const hold = (json: Record<string, unknown>) => t.api(`/api/runners/${r.runnerId}/hold`, { json });
    expect(await refused(await hold({ for: '1h' }))).toEqual([400, 'invalid_request', 'reason: required for a new hold (only extend: true may leave it out, keeping the current reason)', 'reason']);
    expect(await refused(await hold({ for: '1h', extend: true }))).toEqual([409, 'not_held', 'runner held-box is not on hold: nothing to extend', 'extend']);
    const first = (await (await hold({ for: '1h', reason: 'disk full' })).json()) as Runner;
    const extended = (await (await hold({ for: '15m', extend: true })).json()) as Runner;
    expect(extended.hold?.reason).toBe('disk full');
    expect(Date.parse(extended.hold!.until) - Date.parse(first.hold!.until)).toBe(15 * 60_000);
    const renamed = (await (await hold({ for: '15m', extend: true, reason: 'still full' })).json()) as Runner;
    expect(renamed.hold?.reason).toBe('still full');
    // One line: a newline would break the runner listing's rows.
    expect(await refused(await hold({ for: '1h', reason: 'line1\nline2' }))).toEqual([400, 'invalid_request', 'reason: must be one line of printable text: found a newline (U+000A) (it is shown in listings)', 'reason']);
    // Nor a line separator, nor a terminal escape sequence (it would recolour or clear the terminal of whoever lists runners).
    expect(await refused(await hold({ for: '1h', reason: 'a\u2028b' }))).toEqual([400, 'invalid_request', 'reason: must be one line of printable text: found U+2028 (it is shown in listings)', 'reason']);
    expect(await refused(await hold({ for: '1h', reason: 'ok \u001b[2J' }))).toEqual([400, 'invalid_request', 'reason: must be one line of printable text: found an escape (ESC) (U+001B) (it is shown in listings)', 'reason']);
    // At most 7 days ahead: the hold ends in 1 h 30 min now; six 1 d extensions fit, the seventh does not.
    for (let i = 0; i < 6; i++) expect((await hold({ for: '1d', extend: true })).status).toBe(200);
    const tooLong = await refused(await hold({ for: '1d', extend: true }));
    expect(tooLong.slice(0, 2)).toEqual([409, 'hold_too_long']);
    expect(tooLong[2]).toMatch(/^runner held-box's hold would end \S+, more than 7 days from now/);
  });

  it('a revoked runner cannot be held (409 revoked)', async () => {
    const r = await FakeRunner.start(t, { name: 'gone-box' });
    fakes.push(r);
    expect((await t.api(`/api/runners/${r.runnerId}/revoke`, { method: 'POST' })).status).toBe(200);
    expect(await refused(await t.api(`/api/runners/${r.runnerId}/hold`, { json: { for: '1h', reason: 'x' } }))).toEqual([409, 'revoked', 'runner gone-box was revoked: it can never take a job, so there is nothing to hold', 'id']);
  });

  it('a revoked runner\'s capacity cannot be set (409 revoked, nothing stored)', async () => {
    const r = await FakeRunner.start(t, { name: 'gone-too' });
    fakes.push(r);
    expect((await t.api(`/api/runners/${r.runnerId}/revoke`, { method: 'POST' })).status).toBe(200);
    const patch = await t.api(`/api/runners/${r.runnerId}`, { method: 'PATCH', json: { capacity: 3 } });
    expect(await refused(patch)).toEqual([409, 'revoked', `runner gone-too (${r.runnerId}) was revoked: it can never take a job, so its capacity cannot be set`, 'id']);
    expect((await t.store.getRunner(r.runnerId))?.ownerCapacity ?? null).toBe(null);
  });
});
