/**
 * The built CLI (bin/flotilla.js, a child process) against a real server: how it fails.
 * - With `--json` (or FLOTILLA_JSON) every error is one line of JSON on stderr, nothing on
 *   stdout, and a non-zero exit code: API errors, usage errors, errors before any request.
 * - A --server that is not Flotilla (an HTTP server answering HTML, https:// to a plain-HTTP
 *   port) gets one line naming the URL and what was wrong, not the HTML or OpenSSL's text.
 * - `jobs show` masks the password of a repo URL in the input; `runners --held` lists a held
 *   runner that went offline, which `--status on_hold` does not (its status is `offline`);
 *   list flags read their FLOTILLA_JOB_* variables.
 * Needs `npx tsc -p tsconfig.build.json` first (bin/flotilla.js runs dist/).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnFlotilla } from './helpers.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job, RunnerList } from '../src/protocol/index.js';

let t: TestServer;
let html: Server;
let htmlUrl = '';
let json: Server;
let jsonUrl = '';
const fakes: FakeRunner[] = [];

/** Runs the built CLI with no FLOTILLA_* variable but those in `env`; stdout and stderr apart. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const child = spawnFlotilla(args, env); // over process.env, whose FLOTILLA_* variables beforeAll removed
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, out, err };
}
const api = (...args: string[]) => cli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  t = await startTestServer({ dispatchIntervalMs: 100, heartbeatTimeoutMs: 120_000 });
  // Not Flotilla: answers every request with an HTML page, 404.
  html = createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE HTML>\n<html>\n  <head><title>Error response</title></head>\n  <body><h1>Error 404</h1></body>\n</html>\n');
  });
  await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
  htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}`;
  // Not Flotilla either: answers every request 200 with some JSON (another API on that port).
  json = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id":"msg_1","type":"message","content":[]}');
  });
  await new Promise<void>((r) => json.listen(0, '127.0.0.1', r));
  jsonUrl = `http://127.0.0.1:${(json.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await new Promise<void>((r) => html.close(() => r()));
  await new Promise<void>((r) => json.close(() => r()));
  await t.close();
});

/** The one line of stderr, parsed as JSON. */
function jsonError(err: string): { error: { message: string; code: string; status?: number; field?: string } } {
  const lines = err.split('\n').filter((l) => l !== '');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as { error: { message: string; code: string; status?: number; field?: string } };
}

describe('--json errors', () => {
  it('an API error is one JSON line on stderr with the code, status and message; nothing on stdout; exit 1', async () => {
    const r = await api('jobs', 'show', '999999', '--json');
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(jsonError(r.err)).toEqual({ error: { message: 'no job 999999', code: 'not_found', status: 404 } });
    // Without --json: the same message as text.
    const text = await api('jobs', 'show', '999999');
    expect(text.code).toBe(1);
    expect(text.err).toBe('flotilla: no job 999999\n');
  });

  it('a field the API names is in it; FLOTILLA_JSON=1 asks for it as --json does', async () => {
    const r = await cli(['tokens', 'create', 'ci', '--role', 'member', '--server', t.url, '--token', 'fla_nosuchtoken'], { FLOTILLA_JSON: '1' });
    expect(r.code).toBe(1);
    const e = jsonError(r.err).error;
    expect(e.status).toBe(401);
    expect(e.code).toBe('unauthorized');
    expect(e.message).toMatch(/check --token \/ FLOTILLA_TOKEN$/);
    const bad = await api('budget', '999999', '--add', '5', '--json');
    expect(bad.code).toBe(1);
    expect(jsonError(bad.err).error).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('usage errors (unknown option, bad value, missing argument) are JSON too, exit 2', async () => {
    const unknown = await api('jobs', '--bogus', '--json');
    expect(unknown.code).toBe(2);
    expect(jsonError(unknown.err)).toEqual({ error: { message: "unknown option '--bogus'", code: 'usage' } });
    const badId = await api('jobs', 'show', 'x', '--json');
    expect(badId.code).toBe(2);
    expect(jsonError(badId.err).error.message).toContain('job id must be a whole number from 1 to 2147483647');
    const missing = await cli(['budget'], { FLOTILLA_JSON: 'yes' });
    expect(missing.code).toBe(2);
    expect(jsonError(missing.err)).toEqual({ error: { message: "missing required argument 'job'", code: 'usage' } });
    // An error of the CLI's own, before any request: --server not a URL.
    const server = await cli(['agents', '--json', '--server', 'notaurl', '--token', 'fla_x']);
    expect(server.code).toBe(2);
    expect(jsonError(server.err)).toEqual({ error: { message: '--server: url "notaurl" must start with http:// or https:// (from --server or FLOTILLA_SERVER)', code: 'usage' } });
  });
});

describe('a --server that is not the Flotilla control plane', () => {
  it('an HTTP server answering HTML: one line naming the URL, the status and the content type, no HTML', async () => {
    const r = await cli(['jobs', '--server', htmlUrl, '--token', 'fla_abc']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`flotilla: GET /api/jobs?limit=20: ${htmlUrl} answered 404 with text/html: is it the Flotilla control plane? (check --server / FLOTILLA_SERVER)\n`);
    const j = await cli(['agents', '--json', '--server', htmlUrl, '--token', 'fla_abc']);
    expect(j.code).toBe(1);
    expect(jsonError(j.err).error).toMatchObject({ code: 'http_404', status: 404 });
    expect(j.err).not.toContain('<');
  });

  it('an HTTP server answering JSON of another shape: one short line naming the URL and the first field amiss', async () => {
    for (const args of [['jobs'], ['run', 'test-fixer', '{}', '--detach']]) {
      const r = await cli([...args, '--server', jsonUrl, '--token', 'fla_abc']);
      expect(r.code).toBe(1);
      expect(r.err.split('\n')).toHaveLength(2); // one line and its newline
      expect(r.err).toMatch(new RegExp(`^flotilla: (GET|POST) /api/jobs\\S*: ${jsonUrl.replace(/\./g, '\\.')} answered 200 with JSON that is not the reply Flotilla sends \\([^)]*, and \\d+ more\\): is it the Flotilla control plane\\? \\(check --server / FLOTILLA_SERVER\\)\n$`));
      expect(r.err.length).toBeLessThan(300);
    }
  });

  it("the local admin token (FLOTILLA_DATA's admin-token) goes only to the server of that data folder: a mistyped port to another local service never sees it (fresh-tester finding)", async () => {
    const seen: Array<string | undefined> = [];
    const sniffer = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => sniffer.listen(0, '127.0.0.1', r));
    const sniffUrl = `http://127.0.0.1:${(sniffer.address() as AddressInfo).port}`;
    try {
      const r = await cli(['jobs'], { FLOTILLA_DATA: t.dataDir, FLOTILLA_SERVER: sniffUrl });
      expect(r.code).toBe(1);
      expect(r.err).toMatch(new RegExp(`^flotilla: the server at ${sniffUrl.replace(/\./g, '\\.')} did not prove that it holds the admin token in \\S+admin-token .*so the token was not sent`));
      expect(seen).toEqual([undefined]); // the one /healthz probe, with no Authorization
      // the data folder's own server: served with that token
      const ok = await cli(['jobs', '--json'], { FLOTILLA_DATA: t.dataDir, FLOTILLA_SERVER: t.url });
      expect(ok.code).toBe(0);
      expect(Array.isArray(JSON.parse(ok.out).jobs)).toBe(true);
    } finally {
      await new Promise<void>((r) => sniffer.close(() => r()));
    }
  });

  it('https:// to a plain-HTTP port: "TLS handshake failed: is the server https?", one line', async () => {
    const https = t.url.replace(/^http:/, 'https:');
    const r = await cli(['jobs', '--server', https, '--token', t.admin]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`flotilla: cannot reach the Flotilla server at ${https}: TLS handshake failed (wrong version number): is the server https? (check --server / FLOTILLA_SERVER)\n`);
  });
});

describe('what lists and shows print', () => {
  it('jobs: the "more:" line pages the same list (its filters and page size kept)', async () => {
    // pr-reviewer: an agent no other test here lists by
    for (let i = 0; i < 3; i++) await t.api('/api/jobs', { json: { agent: 'pr-reviewer', input: { repo: 'x' }, labels: { pool: 'nobody' } } });
    const queued = (await (await t.api('/api/jobs?agent=pr-reviewer&status=queued&limit=200')).json()) as { jobs: Job[] };
    const newest = queued.jobs.map((j) => j.id);
    expect(newest.length).toBe(3);
    const r = await api('jobs', '--agent', 'pr-reviewer', '--status', 'queued', '--limit', '2');
    expect(r.code).toBe(0);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe(`more: flotilla jobs --status queued --agent pr-reviewer --limit 2 --before ${newest[1]}`);
    const next = await api('jobs', '--status', 'queued', '--agent', 'pr-reviewer', '--limit', '2', '--before', String(newest[1]));
    expect(next.out.split('\n').filter((l) => /^\d+ /.test(l)).map((l) => Number(l.split(' ')[0]))).toEqual(newest.slice(2, 4));
  });

  it('jobs show masks the password of a repo URL in the input (the job keeps the real one); --json is the API\'s job', async () => {
    const repo = 'https://ada:s3cret-pw@git.example.com/team/api.git';
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo }, labels: { pool: 'nobody' } } });
    const job = (await res.json()) as Job;
    expect((await t.store.getJob(job.id))?.input).toEqual({ repo });
    const r = await api('jobs', 'show', String(job.id));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^input: {5}\{"repo":"https:\/\/ada:\*\*\*@git\.example\.com\/team\/api\.git"\}$/m);
    expect(r.out).not.toContain('s3cret');
    const j = await api('jobs', 'show', String(job.id), '--json');
    expect((JSON.parse(j.out) as { job: Job }).job.input).toEqual({ repo });
  });

  it('jobs list reads FLOTILLA_JOB_STATUS, FLOTILLA_JOB_AGENT and FLOTILLA_JOB_LIMIT; the flag wins', async () => {
    const mk = async (agent: string) => ((await (await t.api('/api/jobs', { json: { agent, input: agent === 'test-fixer' ? { repo: 'x' } : {}, labels: { pool: 'nobody' } } })).json()) as Job).id;
    const a = await mk('test-fixer');
    const b = await mk('gpu-job');
    const c = await mk('test-fixer');
    expect((await t.api(`/api/jobs/${c}/cancel`, { method: 'POST' })).status).toBe(200);
    const ids = (out: string) => (JSON.parse(out) as { jobs: Job[] }).jobs.map((j) => j.id);
    const byEnv = await api('jobs', '--json', '--limit', '200');
    expect(ids(byEnv.out)).toEqual(expect.arrayContaining([a, b, c]));
    expect(ids((await cli(['jobs', '--json', '--server', t.url, '--token', t.admin], { FLOTILLA_JOB_AGENT: 'gpu-job' })).out)).toEqual([b]);
    expect(ids((await cli(['jobs', '--json', '--server', t.url, '--token', t.admin], { FLOTILLA_JOB_STATUS: 'cancelled' })).out)).toEqual([c]);
    expect(ids((await cli(['jobs', '--json', '--server', t.url, '--token', t.admin], { FLOTILLA_JOB_LIMIT: '1' })).out)).toEqual([c]);
    expect(ids((await cli(['jobs', '--json', '--limit', '2', '--server', t.url, '--token', t.admin], { FLOTILLA_JOB_LIMIT: '1' })).out)).toEqual([c, b]);
    const help = await cli(['jobs', 'list', '--help']);
    for (const v of ['FLOTILLA_JOB_STATUS', 'FLOTILLA_JOB_AGENT', 'FLOTILLA_JOB_LIMIT', 'FLOTILLA_JOB_BEFORE']) expect(help.out.replace(/\s+/g, ' ')).toContain(`env: ${v})`);
  });

  it('a held runner that goes offline: status offline with its hold; --status on_hold leaves it out, --held lists it', async () => {
    const r = await FakeRunner.start(t, { name: 'held-away' });
    fakes.push(r);
    await r.hello({ name: 'held-away' });
    expect((await api('hold', 'held-away', '--for', '1h', '--reason', 'disk full')).code).toBe(0);
    await r.close();
    const status = async () => (JSON.parse((await api('runners', '--json')).out) as RunnerList).runners.find((x) => x.name === 'held-away');
    for (let i = 0; i < 100 && (await status())?.status !== 'offline'; i++) await new Promise((res) => setTimeout(res, 100));
    const row = await status();
    expect(row?.status).toBe('offline');
    expect(row?.hold?.reason).toBe('disk full');

    const names = (out: string) => (JSON.parse(out) as RunnerList).runners.map((x) => x.name);
    expect(names((await api('runners', '--status', 'on_hold', '--json')).out)).not.toContain('held-away');
    expect(names((await api('runners', '--status', 'offline', '--json')).out)).toContain('held-away');
    const held = await api('runners', '--held', '--json');
    expect(held.code).toBe(0);
    expect(names(held.out)).toEqual(['held-away']);
    const text = await api('runners', '--held');
    expect(text.out).toMatch(new RegExp(`^${r.runnerId}\\s+held-away\\s+offline\\s.*disk full`, 'm'));
    expect(names((await cli(['runners', '--json', '--server', t.url, '--token', t.admin], { FLOTILLA_RUNNER_HELD: '1' })).out)).toEqual(['held-away']);
    const help = await cli(['runners', 'list', '--help']);
    expect(help.out.replace(/\s+/g, ' ')).toContain('So an offline runner on hold is offline, its hold still in the hold column: --held lists held runners whatever their status');
  });
});
