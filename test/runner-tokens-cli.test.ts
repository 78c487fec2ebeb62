/**
 * `flotilla runners token create|list|revoke` through main() against a real server: the id
 * printed at create, the live list and `--all`, revoking (twice), a revoked token refused at
 * registration, exit codes (0 success, 1 API error, 2 bad arguments), `--help`, and the
 * FLOTILLA_RUNNER_TOKEN_TTL / FLOTILLA_RUNNER_TOKENS_ALL variables.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';

let t: TestServer;
const savedEnv = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

type Info = { id: number; labels: Record<string, string>; status: string; createdAt: string; expiresAt: string; usedAt: string | null; revokedAt: string | null };

beforeAll(async () => {
  t = await startTestServer();
});
beforeEach(() => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
});
afterAll(async () => {
  await t.close();
  process.env = { ...savedEnv };
});

describe('runners token list / revoke', () => {
  it('create prints the id to revoke; list shows live tokens (never the token); revoke stops registration; --all shows it revoked', async () => {
    expect(await run('runners', 'token', 'list')).toMatchObject({ code: 0, out: 'no live runner registration tokens (--all also lists used, expired and revoked ones)\n', err: '' });

    const made = await run('runners', 'token', 'create', '--labels', 'os=linux,pool=ci', '--ttl', '600');
    expect(made.code).toBe(0);
    const token = made.out.trim();
    expect(token).toMatch(/^flr_[A-Za-z0-9_-]+$/);
    const idText = /^revoke it unused: flotilla runners token revoke (\d+)$/m.exec(made.err)?.[1];
    expect(idText).toBeDefined();
    const id = Number(idText);

    // --ttl from the environment: expires 120 s after it was created.
    process.env.FLOTILLA_RUNNER_TOKEN_TTL = '120';
    const viaEnv = await run('runners', 'token', 'create', '--json');
    expect(viaEnv.code).toBe(0);
    const second = JSON.parse(viaEnv.out) as { id: number; token: string; expiresAt: string };
    expect(second.id).toBeGreaterThan(id);
    delete process.env.FLOTILLA_RUNNER_TOKEN_TTL;

    const listed = await run('runners', 'token', 'list', '--json');
    expect(listed.code).toBe(0);
    const rows = (JSON.parse(listed.out) as { tokens: Info[] }).tokens;
    expect(rows.map((r) => [r.id, r.status, r.labels, r.usedAt, r.revokedAt])).toEqual([
      [id, 'live', { os: 'linux', pool: 'ci' }, null, null],
      [second.id, 'live', {}, null, null],
    ]);
    expect(Date.parse(rows[0]!.expiresAt) - Date.parse(rows[0]!.createdAt)).toBe(600_000);
    expect(Date.parse(rows[1]!.expiresAt) - Date.parse(rows[1]!.createdAt)).toBe(120_000);
    expect(rows[1]!.expiresAt).toBe(second.expiresAt);

    const table = await run('runners', 'token', 'list');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^id\s+status\s+labels\s+created\s+expires\s+used\s+revoked$/m);
    expect(table.out).toMatch(new RegExp(`^${id}\\s+live\\s+os=linux,pool=ci\\s+${rows[0]!.createdAt}\\s+${rows[0]!.expiresAt}\\s*$`, 'm'));
    expect(table.out).not.toContain(token);
    expect(table.out).not.toContain(second.token);

    const revoked = await run('runners', 'token', 'revoke', String(id));
    expect(revoked.code).toBe(0);
    const at = /^runner registration token (\d+) revoked at (\S+)$/.exec(revoked.out.trim());
    expect(at?.[1]).toBe(String(id));
    // Again: fine, same time.
    expect(await run('runners', 'token', 'revoke', String(id))).toMatchObject({ code: 0, out: revoked.out });
    const asJson = await run('runners', 'token', 'revoke', String(id), '--json');
    expect(JSON.parse(asJson.out)).toEqual({ token: { ...rows[0], status: 'revoked', revokedAt: at![2] } });

    // The revoked token no longer registers a runner; the other one does.
    const reg = await t.api('/api/runners/register', { token: null, json: { token, name: 'leaked' } });
    expect(reg.status).toBe(401);
    expect(await reg.json()).toEqual({ error: { code: 'unauthorized', message: 'registration token is unknown, already used, expired or revoked', field: 'token' } });
    expect((await t.api('/api/runners/register', { token: null, json: { token: second.token, name: 'fine' } })).status).toBe(201);

    // Both spent now: the live list is empty; --all (or FLOTILLA_RUNNER_TOKENS_ALL=1) shows them.
    expect((await run('runners', 'token', 'list')).out).toBe('no live runner registration tokens (--all also lists used, expired and revoked ones)\n');
    const all = await run('runners', 'token', 'list', '--all');
    expect(all.out).toMatch(new RegExp(`^${id}\\s+revoked\\s+os=linux,pool=ci\\s+\\S+\\s+\\S+\\s+${at![2]}$`, 'm'));
    expect(all.out).toMatch(new RegExp(`^${second.id}\\s+used\\s+\\S+\\s+\\S+\\s+\\S+\\s*$`, 'm'));
    process.env.FLOTILLA_RUNNER_TOKENS_ALL = '1';
    expect((JSON.parse((await run('runners', 'token', 'list', '--json')).out) as { tokens: Info[] }).tokens.map((r) => [r.id, r.status])).toEqual([
      [id, 'revoked'],
      [second.id, 'used'],
    ]);
    process.env.FLOTILLA_RUNNER_TOKENS_ALL = '0';
    expect((await run('runners', 'token', 'list', '--json')).out).toBe('{"tokens":[]}\n');

    // A used token: revoke says so and changes nothing.
    const used = await run('runners', 'token', 'revoke', String(second.id));
    expect(used.code).toBe(0);
    expect(used.out).toMatch(new RegExp(`^runner registration token ${second.id} was already used at \\S+: it registers no other runner`));
  });

  it('exit 1 on API errors (unknown id named, not an admin); exit 2 on bad arguments; --help', async () => {
    const unknown = await run('runners', 'token', 'revoke', '987654');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no runner registration token 987654');
    expect(unknown.out).toBe('');
    const member = ((await (await t.api('/api/tokens', { json: { name: 'reader', role: 'member' } })).json()) as { token: string }).token;
    for (const args of [['list'], ['revoke', '1']]) {
      const r = await runCli(['runners', 'token', ...args, '--server', t.url, '--token', member]);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.out).toBe('');
    }

    for (const args of [['revoke'], ['revoke', '0'], ['revoke', 'abc'], ['revoke', '2147483648'], ['revoke', '1', '2'], ['list', '--bogus'], ['create', '--ttl', '0'], ['create', '--ttl', '2592001']]) {
      const r = await run('runners', 'token', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.out).toBe('');
    }
    expect((await run('runners', 'token', 'revoke', '0')).err).toMatch(/token id must be a whole number from 1 to 2147483647/);
    process.env.FLOTILLA_RUNNER_TOKEN_TTL = '0';
    expect((await run('runners', 'token', 'create')).code).toBe(2);
    delete process.env.FLOTILLA_RUNNER_TOKEN_TTL;
    process.env.FLOTILLA_RUNNER_TOKENS_ALL = 'maybe';
    const bad = await run('runners', 'token', 'list');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('FLOTILLA_RUNNER_TOKENS_ALL must be 1, 0, true, false, yes or no');
    delete process.env.FLOTILLA_RUNNER_TOKENS_ALL;

    const helps: Array<[string[], string[]]> = [
      [['runners', 'token'], ['create', 'list', 'revoke']],
      [['runners', 'token', 'create'], ['--labels', '--ttl', 'FLOTILLA_RUNNER_TOKEN_TTL', 'FLOTILLA_RUNNER_TOKEN_LABELS']],
      [['runners', 'token', 'list'], ['--all', 'FLOTILLA_RUNNER_TOKENS_ALL', '--json']],
      [['runners', 'token', 'revoke'], ['<id>', '--json']],
    ];
    for (const [words, expected] of helps) {
      const h = await runCli([...words, '--help']);
      expect(h.code, words.join(' ')).toBe(0);
      expect(h.out).toContain(`Usage: flotilla ${words.join(' ')}`);
      for (const e of expected) expect(h.out, `${words.join(' ')}: ${e}`).toContain(e);
    }
  });
});
