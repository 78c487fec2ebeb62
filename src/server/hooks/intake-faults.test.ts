import { connect } from 'node:net';
import { createRequire } from 'node:module';
import type { WebhookEventName } from '@octokit/webhooks-types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../store/test-pg.js';
import { startTestServer, type TestServer } from '../test-helpers.js';
import type { CreatedReceiver, HookResult } from '../../protocol/index.js';
import { giteaSignature, githubExample, postGithub } from './hook-test-util.js';
import { GITHUB_EVENTS, type GithubEventName } from './github-events.js';

// Fresh-user faults of the webhook intake (FX3): names that cannot be receivers' reaching the
// store (NUL: a 500 on PostgreSQL), a signed body that is not UTF-8 answered as a bad
// signature, GitHub events that do not exist routed like real ones.
const pg: TestDatabase | null = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});
const engines = [{ name: 'SQLite', url: undefined as string | undefined }, ...(pg ? [{ name: 'PostgreSQL', url: pg.url }] : [])];
type Err = { error: { code: string; message: string } };

// Compile-time (tsc): every event name @octokit/webhooks-types knows is in GITHUB_EVENTS.
const allKnown: [Exclude<WebhookEventName, GithubEventName>] extends [never] ? true : false = true;

describe('GITHUB_EVENTS', () => {
  it('holds every event of @octokit/webhooks-examples (GitHub\'s documented payloads), ping included, and no typo', () => {
    expect(allKnown).toBe(true);
    const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as { name: string }[];
    expect(examples.length).toBeGreaterThan(50);
    for (const e of examples) expect(GITHUB_EVENTS.has(e.name), e.name).toBe(true);
    for (const name of ['ping', 'issues', 'issue_comment', 'pull_request', 'sub_issues']) expect(GITHUB_EVENTS.has(name), name).toBe(true);
    for (const name of ['bogus', 'issues_comment', 'Issues', 'issue', '']) expect(GITHUB_EVENTS.has(name), name).toBe(false);
  });
});

describe.each(engines)('webhook intake faults ($name)', ({ url }) => {
  let t: TestServer;
  let gh: CreatedReceiver;
  let tea: CreatedReceiver;
  beforeAll(async () => {
    t = await startTestServer({ ...(url ? { databaseUrl: url } : {}), taskPollMs: 100 });
    gh = (await (await t.api('/api/receivers', { json: { name: 'fx3-gh', provider: 'github', policies: { assign: { login: 'fx3-bot', agent: 'issue-worker', coalesceSeconds: 0 } } } })).json()) as CreatedReceiver;
    tea = (await (await t.api('/api/receivers', { json: { name: 'fx3-tea', provider: 'gitea' } })).json()) as CreatedReceiver;
  });
  afterAll(() => t.close());
  const key = (n: number) => `github.com/acme/fx3${url ? '-pg' : ''}/issues/${n}`;
  const assigned = (n: number) => {
    const p = githubExample('issues', 'assigned');
    Object.assign(p.issue as object, { html_url: `https://${key(n)}`, number: n, title: `fx3 ${n}` });
    p.assignee = { login: 'fx3-bot' };
    return JSON.stringify(p);
  };
  const eventsFor = async (k: string) => (await t.store.listTaskEvents(null, 1000)).filter((e) => e.key === k);
  /** Counts the store's receiver lookups while `fn` runs. */
  async function lookups(fn: () => Promise<void>): Promise<number> {
    const store = t.store as unknown as { findReceiverCredentials: (name: string) => Promise<unknown> };
    const real = store.findReceiverCredentials;
    let n = 0;
    store.findReceiverCredentials = (name) => {
      n++;
      return real.call(t.store, name);
    };
    try {
      await fn();
    } finally {
      store.findReceiverCredentials = real;
    }
    return n;
  }

  it('a receiver name with NUL, or one no receiver can have, is 400 on both engines without a store lookup; a well-formed unknown name stays 404', async () => {
    const cases: [string, string][] = [
      ['github/%00', 'the URL must not contain NUL (%00)'],
      ['github/a%00b', 'the URL must not contain NUL (%00)'],
      ['gitea/%00', 'the URL must not contain NUL (%00)'],
      ['generic/%00', 'the URL must not contain NUL (%00)'],
      ['github/fx3-gh?x=%00', 'the URL must not contain NUL (%00)'],
      ['github/FX3-GH', 'receiver name must be 1-63 lowercase letters, digits and dashes'],
      ['gitea/a.b', 'receiver name must be 1-63 lowercase letters, digits and dashes'],
      [`generic/${'a'.repeat(64)}`, 'receiver name must be at most 63 characters'],
      ['github/-x', 'receiver name must be 1-63 lowercase letters, digits and dashes'],
    ];
    const n = await lookups(async () => {
      for (const [path, message] of cases) {
        const res = await fetch(`${t.url}/hooks/${path}`, { method: 'POST', body: '{}' });
        expect([path, res.status, (await res.json()) as Err], path).toEqual([path, 400, { error: { code: 'invalid_request', message } }]);
      }
    });
    expect(n).toBe(0);
    const unknown = await fetch(`${t.url}/hooks/github/no-such-receiver`, { method: 'POST', body: '{}' });
    expect([unknown.status, ((await unknown.json()) as Err).error.message]).toEqual([404, 'no github receiver "no-such-receiver"']);
  });

  it('NUL in a header never reaches the store: node:http refuses the request (400) before the hooks see it', async () => {
    const body = assigned(90);
    const sig = giteaSignature(gh.secret, body);
    for (const header of [`X-GitHub-Delivery: d\0x`, `X-GitHub-Event: issues\0`]) {
      const head = [`POST /hooks/github/fx3-gh HTTP/1.1`, 'Host: x', 'Connection: close', `X-Hub-Signature-256: sha256=${sig}`, 'X-GitHub-Event: issues', 'X-GitHub-Delivery: fx3-nul', header, `Content-Length: ${Buffer.byteLength(body)}`];
      const status = await new Promise<string>((resolve, reject) => {
        const s = connect(Number(new URL(t.url).port), '127.0.0.1', () => s.end(`${head.join('\r\n')}\r\n\r\n${body}`));
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString('latin1')));
        s.on('end', () => resolve(got.split('\r\n')[0] ?? ''));
        s.on('error', reject);
      });
      expect(status).toBe('HTTP/1.1 400 Bad Request');
    }
    expect(await eventsFor(key(90))).toEqual([]);
  });

  it('a correctly signed body that is not UTF-8 is 400 (not 401), a wrongly signed one 401; nothing stored either way', async () => {
    const raw = Buffer.concat([Buffer.from(assigned(91).slice(0, -1)), Buffer.from(',"x":"\xff\xfe"}', 'latin1')]);
    const send = (signature: string) =>
      fetch(`${t.url}/hooks/github/fx3-gh`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': 'fx3-utf8', 'x-hub-signature-256': signature }, body: raw });
    const signed = await send(`sha256=${giteaSignature(gh.secret, raw)}`);
    expect([signed.status, (await signed.json()) as Err]).toEqual([400, { error: { code: 'invalid_json', message: 'webhook body is not valid UTF-8 (JSON text must be UTF-8: RFC 8259 §8.1)' } }]);
    const forged = await send(`sha256=${giteaSignature('not-the-secret', raw)}`);
    expect([forged.status, (await forged.json()) as Err]).toEqual([401, { error: { code: 'bad_signature', message: 'delivery refused: signature does not match the body' } }]);
    expect(await eventsFor(key(91))).toEqual([]);
    // The delivery id was not taken: the same id with a UTF-8 body is new.
    const ok = await postGithub(`${t.url}/hooks/github/fx3-gh`, gh.secret, 'issues', assigned(91), { delivery: 'fx3-utf8' });
    expect(((await ok.json()) as HookResult).outcome).toBe('created');
  });

  it('a signed GitHub delivery of an event GitHub does not document is 200 ignored with the reason, stores nothing and takes no delivery id; ping unchanged', async () => {
    for (const event of ['bogus', 'issues_comment']) {
      const res = await postGithub(`${t.url}/hooks/github/fx3-gh`, gh.secret, event, assigned(92), { delivery: `fx3-ev-${event}` });
      expect([res.status, (await res.json()) as HookResult]).toEqual([
        200,
        { outcome: 'ignored', taskId: null, key: null, reason: `X-GitHub-Event ${JSON.stringify(event)} is not a GitHub webhook event (docs.github.com, "Webhook events and payloads"); nothing was stored` },
      ]);
    }
    expect(await eventsFor(key(92))).toEqual([]);
    expect((await t.store.listTasks({ limit: 500 })).filter((x) => x.keys.includes(key(92)))).toEqual([]);
    // Neither delivery id was taken: the same ids with a real event are new deliveries.
    const real = await postGithub(`${t.url}/hooks/github/fx3-gh`, gh.secret, 'issues', assigned(92), { delivery: 'fx3-ev-bogus' });
    const r = (await real.json()) as HookResult;
    expect([r.outcome, r.key]).toEqual(['created', key(92)]);
    const ping = await postGithub(`${t.url}/hooks/github/fx3-gh`, gh.secret, 'ping', JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 }));
    expect([ping.status, await ping.json()]).toEqual([200, { outcome: 'ignored', taskId: null, key: null }]);
  });

  it('a generic receiver whose CEL makes a NUL (a string escape) stores U+FFFD in its place, as for a payload\'s \\u0000, on both engines', async () => {
    const rec = (await (await t.api('/api/receivers', { json: { name: 'fx3-nul', provider: 'generic', auth: 'bearer', keyExpr: 'payload.k + "\\x00"', summaryExpr: '"s\\u0000"' } })).json()) as CreatedReceiver;
    const res = await fetch(`${t.url}/hooks/generic/fx3-nul`, { method: 'POST', headers: { authorization: `Bearer ${rec.secret}`, 'content-type': 'application/json', 'x-delivery-id': 'fx3-nul-1' }, body: JSON.stringify({ k: `fx3-${url ? 'pg' : 'lite'}` }) });
    const k = `fx3-${url ? 'pg' : 'lite'}\uFFFD`;
    expect([res.status, (await res.json()) as HookResult]).toEqual([200, { outcome: 'unmatched', taskId: null, key: k }]);
    expect((await eventsFor(k)).map((e) => e.summary)).toEqual(['s\uFFFD']);
  });

  it('a Gitea receiver still routes an event name GitHub does not have (unchanged)', async () => {
    const body = JSON.stringify({ action: 'opened', issue: { html_url: `https://${key(93)}`, number: 93, title: 'fx3' }, sender: { username: 'tea' } });
    const res = await fetch(`${t.url}/hooks/gitea/fx3-tea`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gitea-event': 'bogus', 'x-gitea-delivery': 'fx3-tea-1', 'x-gitea-signature': giteaSignature(tea.secret, body) },
      body,
    });
    expect([res.status, (await res.json()) as HookResult]).toEqual([200, { outcome: 'unmatched', taskId: null, key: key(93) }]);
    expect((await eventsFor(key(93))).map((e) => e.kind)).toEqual(['bogus.opened']);
  });
});
