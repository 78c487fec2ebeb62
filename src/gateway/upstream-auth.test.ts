/**
 * An upstream 401/403 — the model provider refused the SERVER's key (revoked, expired) — must
 * not reach the job as its own authentication error (Claude Code then blames the job token,
 * which the gateway accepted). Every route maps it (upstream-auth.ts) to the wire format's
 * server error that harnesses do not retry: Anthropic 500 `api_error`, OpenAI 500
 * `server_error`, with `x-should-retry: false` and a message saying the provider refused the
 * gateway's key and an admin must fix it — no key text, not even masked. The admin gets an
 * error log line (no key); the call is recorded with the upstream status, no tokens, $0, and
 * its reservation released. Real HTTP, a fake upstream answering as the real APIs do for a bad
 * key (echoing it), a real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../core/log.js';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { startGateway } from './test-server.js';
import { runningJob } from './test-stores.js';
import { fakeUpstream, type SeenRequest } from './test-upstream.js';

const TOKEN = 'flj_upstreamauth_0123456789abcdefgh';
const ANT_KEY = 'sk-ant-api03-revokedrevokedrevoked-1234';
const OAI_KEY = 'sk-proj-revokedrevokedrevokedrevo-5678';

/** What the real APIs answer a bad key with (the key echoed), 401 or `status`. */
function refuseKey(status: number) {
  return (r: SeenRequest) => {
    const openai = !r.url.startsWith('/v1/messages');
    const key = openai ? String(r.headers.authorization) : String(r.headers['x-api-key']);
    const body = openai
      ? { error: { message: `Incorrect API key provided: ${key}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } }
      : { type: 'error', error: { type: status === 401 ? 'authentication_error' : 'permission_error', message: `invalid x-api-key: ${key}` } };
    return { status, headers: { 'content-type': 'application/json', 'x-upstream-saw': key }, body: JSON.stringify(body) };
  };
}

const msg = (extra: object = {}) => ({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...extra });
const CALLS: Array<[path: string, body: object, format: 'anthropic' | 'openai', api: string, provider: string]> = [
  ['/v1/messages', msg(), 'anthropic', 'anthropic-messages', 'anthropic'],
  ['/v1/messages?beta=true', msg({ stream: true }), 'anthropic', 'anthropic-messages', 'anthropic'],
  ['/v1/messages/count_tokens', msg(), 'anthropic', 'anthropic-count-tokens', 'anthropic'],
  ['/v1/chat/completions', { model: 'gpt-4o', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, 'openai', 'openai-chat', 'openai'],
  ['/v1/responses', { model: 'gpt-4o', max_output_tokens: 10, input: 'hi', stream: true }, 'openai', 'openai-responses', 'openai'],
];

/** The ledger rows of the SQLite file at `file`, oldest first. */
function rows(file: string): Array<Record<string, unknown>> {
  const db = new BetterSqlite3(file, { readonly: true });
  try {
    return db.prepare('select api, provider, model, http_status, refused, input_tokens, output_tokens, usage_known, cost_micros from model_calls order by id').all() as Array<Record<string, unknown>>;
  } finally {
    db.close();
  }
}

/** What {@link callEveryRoute} hands back: each route's reply, then the ledger, the tree's budget, the error log and what the upstream saw. */
interface Outcome {
  replies: Array<{ status: number; retry: string | null; text: string; headers: string }>;
  rows: Array<Record<string, unknown>>;
  spentAndReserved: [number, number];
  errors: Array<{ msg: string; fields: Record<string, unknown> }>;
  upstreamCalls: number;
}

/** Every call of CALLS through a gateway over a real SQLite store (one running job, $5) whose upstream (one key per provider) answers `reply`. */
async function callEveryRoute(reply: (r: SeenRequest) => { status: number; headers: Record<string, string>; body: string }): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-upstream-auth-'));
  const file = join(dir, 'flotilla.db');
  const store = await openSqliteStore(file);
  const up = await fakeUpstream(reply);
  const errors: Outcome['errors'] = [];
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (m, f = {}) => void errors.push({ msg: m, fields: f }), child: () => log };
  try {
    const job = await runningJob(store, TOKEN, { budgetMicros: 5_000_000 });
    const gw = await startGateway<Store>({
      store,
      job: { token: TOKEN },
      upstream: up,
      config: {
        anthropicApiKey: ANT_KEY,
        openai: { provider: 'openai', baseUrl: up.url + '/v1', apiKeys: [OAI_KEY] },
        modelProviders: [
          { pattern: 'claude-*', provider: 'anthropic' },
          { pattern: 'gpt-*', provider: 'openai' },
        ],
      },
      log,
    });
    const replies: Outcome['replies'] = [];
    try {
      for (const [path, body] of CALLS) {
        const res = await gw.post(path, body);
        replies.push({ status: res.status, retry: res.headers.get('x-should-retry'), text: await res.text(), headers: JSON.stringify([...res.headers]) });
      }
    } finally {
      await gw.close();
    }
    const tree = (await store.getTreeBudget(job.id, Date.now()))!;
    return { replies, rows: rows(file), spentAndReserved: [tree.spentMicros, tree.reservedMicros], errors, upstreamCalls: up.seen.length };
  } finally {
    await up.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

type ErrorBody = { type?: string; error: { type: string; message: string; code?: string } };

describe.each([401, 403])('the provider refuses the gateway\'s key (upstream %i)', (status) => {
  it('every route: 500 in its wire format, x-should-retry: false, the admin named, no key text; recorded with the upstream status at $0; logged as an error', async () => {
    const out = await callEveryRoute(refuseKey(status));
    CALLS.forEach(([path, , format, , provider], i) => {
      const { status: got, retry, text, headers } = out.replies[i]!;
      expect([got, retry], path).toEqual([500, 'false']);
      const json = JSON.parse(text) as ErrorBody;
      if (format === 'anthropic') expect([json.type, json.error.type], path).toEqual(['error', 'api_error']);
      else expect([json.error.type, json.error.code], path).toEqual(['server_error', 'upstream_auth_failed']);
      expect(json.error.message, path).toContain(`the model provider (${provider}) refused the gateway's key for this provider (HTTP ${status})`);
      expect(json.error.message, path).toContain(`an admin must fix ${provider === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY'}`);
      // no key text at all, not even masked; not the upstream's own words
      for (const t of [text, headers]) expect(t, path).not.toMatch(/1234|5678|redacted|invalid x-api-key|Incorrect API key/);
    });
    expect(out.upstreamCalls).toBe(CALLS.length);
    // recorded with the upstream status, no tokens, usage known, $0, not as refused
    expect(out.rows).toEqual(CALLS.map(([, body, , api, provider]) => ({ api, provider, model: (body as { model: string }).model, http_status: status, refused: null, input_tokens: 0, output_tokens: 0, usage_known: 1, cost_micros: 0 })));
    expect(out.spentAndReserved).toEqual([0, 0]);
    // one error line per call for the admin: provider and status, never a key
    expect(out.errors.map((e) => [e.msg, e.fields.provider, e.fields.status])).toEqual(CALLS.map(([, , , , provider]) => ["gateway: the model provider refused the gateway's key: an admin must fix the key", provider, status]));
    expect(JSON.stringify(out.errors)).not.toMatch(/1234|5678|sk-/);
  });
});

/**
 * What the real APIs answer when the key's account has no credit: OpenAI 429
 * `insufficient_quota`; Anthropic its documented 402 `billing_error`, or (`anthropic400`) the 400
 * `invalid_request_error` it sends in practice (the body Claude Code users report, with its
 * request_id), on count_tokens too.
 */
function refuseBilling(anthropic400: boolean) {
  return (r: SeenRequest) => {
    const openai = !r.url.startsWith('/v1/messages');
    const words = 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.';
    const body = openai
      ? { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } }
      : anthropic400
        ? { type: 'error', error: { type: 'invalid_request_error', message: words }, request_id: 'req_011CbrFTcXhtiMzr3s6EocF7' }
        : { type: 'error', error: { type: 'billing_error', message: words } };
    return { status: openai ? 429 : anthropic400 ? 400 : 402, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  };
}

describe.each([
  ['402 billing_error', 402],
  ['400 "Your credit balance is too low"', 400],
])("the provider refuses the gateway's key for billing (Anthropic %s, OpenAI 429 insufficient_quota)", (_, anthropicStatus) => {
  it("every route: 500 naming the provider account, never the 402 / 429 insufficient_quota of the job's own budget; one upstream call (no retry of the same key); $0; an error for the admin", async () => {
    // fresh-user finding: the provider's 429 insufficient_quota reached the job verbatim, the same
    // reply as the gateway's budget refusal, so Codex stopped as if its budget were spent
    const out = await callEveryRoute(refuseBilling(anthropicStatus === 400));
    CALLS.forEach(([path, , format, , provider], i) => {
      const { status, retry, text } = out.replies[i]!;
      const json = JSON.parse(text) as ErrorBody;
      expect([status, retry], path).toEqual([500, 'false']);
      if (format === 'anthropic') expect([json.type, json.error.type], path).toEqual(['error', 'api_error']);
      else expect([json.error.type, json.error.code], path).toEqual(['server_error', 'upstream_billing_refused']);
      expect(json.error.message, path).toBe(
        `the model provider (${provider}) refused the gateway's key for billing (HTTP ${format === 'anthropic' ? anthropicStatus : 429}): the provider account behind the server's key has no credit or quota left; ` +
          `an admin must add credit to that account, or set a key of another account in ${provider === 'anthropic' ? 'ANTHROPIC_API_KEY (several keys: comma-separated)' : 'OPENAI_API_KEY (several keys: comma-separated; OPENAI_BASE_URL for another endpoint)'} in the server's environment and restart it. Not this job's budget, which had room for the call`,
      );
    });
    // one key, and a billing refusal is not retried on it: one upstream call per client call
    expect(out.upstreamCalls).toBe(CALLS.length);
    expect(out.rows.map((r) => [r.api, r.http_status, r.refused, r.cost_micros])).toEqual(CALLS.map(([, , format, api]) => [api, format === 'anthropic' ? anthropicStatus : 429, null, 0]));
    expect(out.spentAndReserved).toEqual([0, 0]);
    expect(out.errors.map((e) => [e.msg, e.fields.provider, e.fields.status])).toEqual(
      CALLS.map(([, , format, , provider]) => ["gateway: the model provider refused the gateway's key for billing (its account has no credit or quota left): an admin must add credit or change the key", provider, format === 'anthropic' ? anthropicStatus : 429]),
    );
  });
});
