/**
 * End to end: the REAL Claude Code CLI against the gateway's scripted model on a real port,
 * fixing a real copy of examples/calc. This is the main risk of the spine, so it runs the
 * exact flags and environment the claude-code harness uses.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTemplate } from '../core/template.js';
import { createGateway } from './gateway.js';
import { MemoryGatewayStore } from './memory-store.js';
import { loadPriceTable } from './prices.js';
import { loadModelScript } from './script.js';
import { listen, type TestServer } from './test-server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLAUDE = join(ROOT, 'node_modules/.bin/claude');
const SCRIPT_FILE = join(ROOT, 'agents/test-fixer/script.yaml');
const JOB_ID = 7;
const TOKEN = 'flj_e2e_0123456789abcdefghijklmnop';

interface Run {
  code: number | null;
  lines: Record<string, unknown>[];
  stderr: string;
}

function runClaude(cwd: string, home: string, baseUrl: string, prompt: string, token = TOKEN): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(CLAUDE, ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions', '--model', 'claude-sonnet-4-5'], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: home,
        IS_SANDBOX: '1',
        ANTHROPIC_BASE_URL: baseUrl,
        ANTHROPIC_API_KEY: token,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
    });
    let out = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), 90_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      const lines = out
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines, stderr });
    });
  });
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

describe('real Claude Code CLI through the scripted gateway', () => {
  const store = new MemoryGatewayStore();
  const script = loadModelScript(SCRIPT_FILE);
  let gw: TestServer;
  let repo: string;
  let home: string;
  let run: Run;

  beforeAll(async () => {
    store.addJob(TOKEN, { id: JOB_ID, agent: 'test-fixer' });
    const app = createGateway({
      store,
      config: { provider: 'scripted', anthropicBaseUrl: 'http://unused.invalid', prices: loadPriceTable() },
      scriptFor: async (job) => (job.agent === 'test-fixer' ? script : null),
    });
    gw = await listen(app.fetch);
    // a fresh git repository holding examples/calc, on the job's branch, with a local identity
    // (the job's HOME is empty, so there is no global git config), as the runner prepares it
    repo = mkdtempSync(join(tmpdir(), 'flotilla-calc-'));
    cpSync(join(ROOT, 'examples/calc'), repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'config', 'user.name', 'Flotilla');
    git(repo, 'config', 'user.email', 'flotilla@localhost');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'calc');
    git(repo, 'checkout', '-qb', `flotilla/job-${JOB_ID}`);
    home = mkdtempSync(join(tmpdir(), 'flotilla-home-'));
    const prompt = renderTemplate(readFileSync(join(ROOT, 'agents/test-fixer/prompt.md'), 'utf8'), {
      input: { repo: 'examples/calc' },
      job: { id: JOB_ID, branch: `flotilla/job-${JOB_ID}` },
    });
    run = await runClaude(repo, home, gw.url, prompt);
  }, 120_000);

  afterAll(async () => {
    await gw?.close();
    for (const d of [repo, home]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('exits 0 with a success result naming the job branch', () => {
    expect(run.code, run.stderr).toBe(0);
    const result = run.lines.find((l) => l.type === 'result');
    expect(result).toMatchObject({
      subtype: 'success',
      is_error: false,
      num_turns: 6,
      result: 'Fixed the off-by-one in sum(): the loop skipped the first element. All 4 tests pass. Committed on branch flotilla/job-7.',
    });
  });

  it('ran the scripted tools in order, and they all worked', () => {
    const calls = run.lines
      .filter((l) => l.type === 'assistant')
      .flatMap((l) => (l.message as { content: { type: string; name?: string; id?: string }[] }).content.filter((b) => b.type === 'tool_use'));
    expect(calls.map((c) => c.name)).toEqual(['Bash', 'Read', 'Edit', 'Bash', 'Bash']);
    expect(calls.map((c) => c.id)).toEqual(['toolu_7_0_1', 'toolu_7_1_1', 'toolu_7_2_1', 'toolu_7_3_1', 'toolu_7_4_1']);
    const results = run.lines
      .filter((l) => l.type === 'user')
      .flatMap((l) => (l.message as { content: { type: string; tool_use_id?: string; is_error?: boolean }[] }).content.filter((b) => b.type === 'tool_result'));
    // the first `npm test` fails (exit 1: that is the bug); Read, Edit, the second test run and the commit succeed
    expect(results.map((r) => [r.tool_use_id, r.is_error === true])).toEqual([
      ['toolu_7_0_1', true],
      ['toolu_7_1_1', false],
      ['toolu_7_2_1', false],
      ['toolu_7_3_1', false],
      ['toolu_7_4_1', false],
    ]);
  });

  it("left the repository's tests passing, with the fix committed on the job branch", () => {
    execFileSync('node', ['--test', 'test/'], { cwd: repo, stdio: 'pipe' }); // throws on a failing test
    expect(git(repo, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('flotilla/job-7');
    expect(git(repo, 'log', '-1', '--format=%s')).toBe('Fix off-by-one in sum(): start the loop at index 0');
    expect(git(repo, 'rev-list', '--count', 'main..HEAD')).toBe('1');
    expect(git(repo, 'diff', 'main', 'HEAD', '--stat')).toMatch(/src\/calc\.js \| 2 \+-/);
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(readFileSync(join(repo, 'src/calc.js'), 'utf8')).toContain('for (let i = 0; i < xs.length; i++)');
  });

  it("recorded one model call per script turn, with the script's tokens and the table's price", () => {
    const calls = store.calls;
    expect(calls).toHaveLength(script.turns.length);
    calls.forEach((c, i) => {
      const u = script.turns[i]!.usage;
      expect(c).toMatchObject({ jobId: 7, provider: 'scripted', model: 'claude-sonnet-4-5', streamed: true, httpStatus: 200, usageKnown: true });
      expect([c.inputTokens, c.outputTokens, c.cacheReadTokens, c.cacheWriteTokens]).toEqual([u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens]);
      // sonnet 4.5 in USD/MTok = µ$/token: input 3, output 15, cache read 0.30, cache write (5 min) 3.75
      const expected = Math.round(u.input_tokens * 3 + u.output_tokens * 15 + u.cache_read_input_tokens * 0.3 + u.cache_creation_input_tokens * 3.75);
      expect(c.costMicros).toBe(expected);
    });
    const sum = (f: (c: (typeof calls)[number]) => number) => calls.reduce((a, c) => a + f(c), 0);
    // the script's sums, added up by hand from agents/test-fixer/script.yaml
    expect(sum((c) => c.inputTokens)).toBe(34);
    expect(sum((c) => c.outputTokens)).toBe(505);
    expect(sum((c) => c.cacheReadTokens)).toBe(76208);
    expect(sum((c) => c.cacheWriteTokens)).toBe(16130);
    // Claude Code prices the same usage on its own side: the totals agree to rounding (1 µ$ per call)
    const result = run.lines.find((l) => l.type === 'result') as { total_cost_usd: number; usage: Record<string, number> };
    expect(result.usage).toMatchObject({ input_tokens: 34, output_tokens: 505, cache_read_input_tokens: 76208, cache_creation_input_tokens: 16130 });
    expect(Math.abs(sum((c) => c.costMicros) - result.total_cost_usd * 1e6)).toBeLessThanOrEqual(calls.length);
  });

  it('stops at once, without retrying, when the job token is refused (401, x-should-retry: false)', async () => {
    const before = store.calls.length;
    const other = mkdtempSync(join(tmpdir(), 'flotilla-home-'));
    try {
      const t0 = Date.now();
      const bad = await runClaude(repo, other, gw.url, 'Say hi.', 'flj_not_a_live_token_0000000000');
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(bad.code).not.toBe(0);
      const result = bad.lines.find((l) => l.type === 'result') as { is_error: boolean; result: string } | undefined;
      expect(result?.is_error).toBe(true);
      expect(bad.lines.filter((l) => l.type === 'system' && l.subtype === 'api_retry')).toHaveLength(0);
      expect(store.calls.length).toBe(before);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  }, 60_000);
});
