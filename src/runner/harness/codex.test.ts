import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentDefinition, type EventBody } from '../../protocol/index.js';
import { codexArgs, codexConfig, codexHarness } from './codex.js';
import { CodexJsonParser, HOLD_MS } from './codex-stream.js';
import type { HarnessContext } from './types.js';

function ctx(over: Partial<HarnessContext> = {}, agent: Record<string, unknown> = {}): HarnessContext {
  return {
    jobId: 5,
    attempt: 1,
    agent: AgentDefinition.parse({ name: 'cx', harness: 'codex', model: 'gpt-5-codex', promptText: 'p', ...agent }),
    input: {},
    prompt: 'make out.txt',
    token: 'flj_codextoken',
    serverUrl: 'http://127.0.0.1:8787/',
    workspace: '/w',
    branch: 'flotilla/job-5',
    home: '/h',
    resumeSessionId: null,
    ...over,
  };
}

const line = (o: unknown) => ({ text: typeof o === 'string' ? o : JSON.stringify(o), truncated: false, droppedBytes: 0, invalidUtf8: false });

describe('codex harness', () => {
  it('writes a per-job CODEX_HOME config pointing at the gateway Responses endpoint, analytics and plugins off', async () => {
    const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
    try {
      const c = ctx({ home, model: 'gpt-5', effort: 'max' });
      await codexHarness.prepare?.(c);
      const toml = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
      expect(toml).toBe(codexConfig(c));
      expect(toml).toContain('model_provider = "flotilla"\nmodel = "gpt-5"\nmodel_reasoning_effort = "xhigh"\n');
      expect(toml).toContain('base_url = "http://127.0.0.1:8787/v1"\nwire_api = "responses"\nenv_key = "OPENAI_API_KEY"');
      expect(toml).toContain('[analytics]\nenabled = false');
      // the agent may commit on its branch: the sandbox keeps .git read-only unless it is a writable root
      expect(toml).toContain('[sandbox_workspace_write]\nwritable_roots = ["/w/.git"]\n');
      expect(codexConfig(ctx({}, { readOnly: true }))).not.toContain('sandbox_workspace_write');
      expect(toml).toContain('[features]\nplugins = false');
      expect(toml).not.toContain('flj_');
      expect(toml).toContain(`[mcp_servers.flotilla]\ncommand = ${JSON.stringify(process.execPath)}\n`);
      expect(toml).toContain('env_vars = ["FLOTILLA_URL","FLOTILLA_JOB_TOKEN","FLOTILLA_JOB_ID"]');
      const cmd = codexHarness.command(c);
      expect(cmd.env).toMatchObject({ CODEX_HOME: join(home, '.codex'), OPENAI_API_KEY: 'flj_codextoken', HOME: home, FLOTILLA_JOB_TOKEN: 'flj_codextoken' });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('asks for the sandbox the agent needs and resumes a session', () => {
    expect(codexArgs(ctx())).toEqual(['exec', '--json', '--sandbox', 'workspace-write', '--skip-git-repo-check', '--', 'make out.txt']);
    expect(codexArgs(ctx({ resumeSessionId: 'th_1' }, { readOnly: true }))).toEqual(['exec', '--json', '--sandbox', 'read-only', '--skip-git-repo-check', 'resume', 'th_1', '--', 'make out.txt']);
  });

  it('turns codex exec --json events into the same job events as Claude Code', () => {
    const p = new CodexJsonParser({ pid: 42, workspace: '/w', branch: 'b' });
    const events = [
      { type: 'thread.started', thread_id: 'th_1' },
      { type: 'turn.started' },
      { type: 'item.started', item: { id: 'item_0', type: 'command_execution', command: 'bash -lc "echo hello > out.txt"', status: 'in_progress' } },
      { type: 'item.completed', item: { id: 'item_0', type: 'command_execution', command: 'bash -lc "echo hello > out.txt"', aggregated_output: '', exit_code: 0, status: 'completed' } },
      { type: 'item.completed', item: { id: 'item_1', type: 'agent_message', text: 'done' } },
      { type: 'turn.completed', usage: { input_tokens: 280, cached_input_tokens: 80, output_tokens: 35 } },
      'not json',
    ].flatMap((o) => p.stdout(line(o)));
    expect(events).toEqual([
      { type: 'harness.started', data: { harness: 'codex', pid: 42, sessionId: 'th_1', workspace: '/w', branch: 'b' } },
      { type: 'tool.call', data: { id: 'item_0', name: 'Bash', input: { command: 'bash -lc "echo hello > out.txt"' } } },
      { type: 'tool.result', data: { id: 'item_0', name: 'Bash', output: '', isError: false } },
      { type: 'message', data: { role: 'assistant', text: 'done' } },
      { type: 'usage', data: { inputTokens: 200, outputTokens: 35, cacheReadTokens: 80, cacheWriteTokens: 0 } },
      { type: 'log', data: { stream: 'stdout', line: 'not json' } },
    ]);
    expect(p.finish({ code: 0, signal: null })).toEqual({ status: 'succeeded', summary: 'done', sessionId: 'th_1' });
  });

  it('keeps Claude Code order when the next call\'s count is in the rollout before its message line', () => {
    const home = mkdtempSync(join(tmpdir(), 'codex-rollout-'));
    try {
      const day = join(home, 'sessions', '2026', '11', '30');
      mkdirSync(day, { recursive: true });
      const file = join(day, 'rollout-2026-11-30T15-15-19-th_8.jsonl');
      const tc = (at: number, input: number, output: number) =>
        JSON.stringify({ timestamp: new Date(at).toISOString(), type: 'event_msg', payload: { type: 'token_count', info: { last_token_usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: output } } } }) + '\n';
      const t0 = Date.UTC(2026, 10, 30, 15, 0, 0);
      writeFileSync(file, '{"type":"session_meta","payload":{}}\n');
      const p = new CodexJsonParser({ pid: 7, codexHome: home, startedAt: t0, model: 'gpt-5-codex' });
      const seq: EventBody[] = [];
      const feed = (o: unknown) => seq.push(...p.stdout(line(o)));
      feed({ type: 'thread.started', thread_id: 'th_8' });
      feed({ type: 'item.completed', item: { id: 'i0', type: 'command_execution', command: 'true', aggregated_output: '', exit_code: 0, status: 'completed' } });
      // Both calls' counts are written before the final message is printed (a slow reader).
      appendFileSync(file, tc(t0 + 10, 120, 30) + tc(t0 + 20, 160, 5));
      seq.push(...p.tick(t0));
      feed({ type: 'item.completed', item: { id: 'i1', type: 'agent_message', text: 'done' } });
      feed({ type: 'turn.completed', usage: { input_tokens: 280, cached_input_tokens: 0, output_tokens: 35 } });
      expect(seq.map((e) => e.type)).toEqual(['harness.started', 'tool.call', 'usage', 'tool.result', 'message', 'usage']);
      expect(seq.filter((e) => e.type === 'usage').map((e) => (e.data as { inputTokens: number }).inputTokens)).toEqual([120, 160]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('emits one usage per model call in Claude Code order, read from the rollout file (earlier runs skipped)', () => {
    const home = mkdtempSync(join(tmpdir(), 'codex-rollout-'));
    try {
      const day = join(home, 'sessions', '2026', '11', '30');
      mkdirSync(day, { recursive: true });
      const file = join(day, 'rollout-2026-11-30T15-15-19-th_9.jsonl');
      const tc = (at: number, input: number, cached: number, output: number, total?: [number, number, number]) =>
        JSON.stringify({
          timestamp: new Date(at).toISOString(),
          type: 'event_msg',
          payload: {
            type: 'token_count',
            info: {
              last_token_usage: { input_tokens: input, cached_input_tokens: cached, output_tokens: output },
              ...(total ? { total_token_usage: { input_tokens: total[0], cached_input_tokens: total[1], output_tokens: total[2] } } : {}),
            },
          },
        }) + '\n';
      const t0 = Date.UTC(2026, 10, 30, 15, 0, 0);
      // A token count of an earlier run of the same (resumed) thread: cumulative 999 in, 99 out.
      writeFileSync(file, tc(t0 - 5000, 999, 0, 99, [999, 0, 99]) + '{"type":"session_meta","payload":{}}\n');
      const p = new CodexJsonParser({ pid: 7, codexHome: home, startedAt: t0, model: 'gpt-5-codex' });
      const seq: EventBody[] = [];
      const feed = (o: unknown) => seq.push(...p.stdout(line(o)));
      feed({ type: 'thread.started', thread_id: 'th_9' });
      feed({ type: 'item.started', item: { id: 'i0', type: 'command_execution', command: 'echo hello > out.txt', status: 'in_progress' } });
      feed({ type: 'item.completed', item: { id: 'i0', type: 'command_execution', command: 'echo hello > out.txt', aggregated_output: '', exit_code: 0, status: 'completed' } });
      // The call's count is not in the rollout yet: the tool result waits for it.
      expect(seq.map((e) => e.type)).toEqual(['harness.started', 'tool.call']);
      expect(p.tick(t0)).toEqual([]);
      appendFileSync(file, tc(t0 + 10, 120, 20, 30));
      seq.push(...p.tick(t0));
      expect(seq.map((e) => e.type)).toEqual(['harness.started', 'tool.call', 'usage', 'tool.result']);
      // The second call's count arrives in two writes (incremental read; a partial line waits).
      const second = tc(t0 + 20, 160, 0, 5);
      appendFileSync(file, second.slice(0, 30));
      feed({ type: 'item.completed', item: { id: 'i1', type: 'agent_message', text: 'done' } });
      appendFileSync(file, second.slice(30));
      // Codex reports the thread's cumulative usage: the earlier run's 999/99 is not this run's.
      feed({ type: 'turn.completed', usage: { input_tokens: 999 + 280, cached_input_tokens: 20, output_tokens: 99 + 35 } });
      expect(seq.map((e) => e.type)).toEqual(['harness.started', 'tool.call', 'usage', 'tool.result', 'message', 'usage']);
      expect(seq.filter((e) => e.type === 'usage').map((e) => e.data)).toEqual([
        { inputTokens: 100, outputTokens: 30, cacheReadTokens: 20, cacheWriteTokens: 0, model: 'gpt-5-codex' },
        { inputTokens: 160, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, model: 'gpt-5-codex' },
      ]);
      // A count that never comes: the held result is released without it after HOLD_MS.
      const r = new CodexJsonParser({ pid: 7, codexHome: home, startedAt: t0 + 60_000 });
      r.stdout(line({ type: 'thread.started', thread_id: 'th_9' }));
      r.stdout(line({ type: 'item.started', item: { id: 'i5', type: 'command_execution', command: 'true' } }));
      expect(r.stdout(line({ type: 'item.completed', item: { id: 'i5', type: 'command_execution', command: 'true', aggregated_output: '', exit_code: 0 } }))).toEqual([]);
      expect(r.tick(Date.now() + HOLD_MS + 1).map((e) => e.type)).toEqual(['tool.result']);
      // ...and, the rollout having given nothing this run, the next result is not held at all.
      r.stdout(line({ type: 'item.started', item: { id: 'i6', type: 'command_execution', command: 'true' } }));
      expect(r.stdout(line({ type: 'item.completed', item: { id: 'i6', type: 'command_execution', command: 'true', aggregated_output: '', exit_code: 0 } })).map((e) => e.type)).toEqual(['tool.result']);
      // Without a readable rollout the turn's total is reported once, at turn.completed.
      const q = new CodexJsonParser({ pid: 7, codexHome: join(home, 'missing'), startedAt: t0 });
      const qs = [{ type: 'thread.started', thread_id: 'th_9' }, { type: 'turn.completed', usage: { input_tokens: 280, cached_input_tokens: 20, output_tokens: 35 } }].flatMap((o) => q.stdout(line(o)));
      expect(qs.filter((e) => e.type === 'usage').map((e) => e.data)).toEqual([{ inputTokens: 260, outputTokens: 35, cacheReadTokens: 20, cacheWriteTokens: 0 }]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('a budget refusal fails with reason budget; a missing binary fails at start', () => {
    const p = new CodexJsonParser({ pid: 1 });
    p.stdout(line({ type: 'turn.failed', error: { message: 'exceeded retry limit, last status: 429 Too Many Requests, insufficient_quota' } }));
    expect(p.finish({ code: 1, signal: null })).toMatchObject({ status: 'failed', reason: 'budget' });
    // Codex 0.171's own words for the gateway's 429 insufficient_quota: a budget refusal, said to be Flotilla's
    const quota = new CodexJsonParser({ pid: 1 });
    quota.stdout(line({ type: 'turn.failed', error: { message: 'Quota exceeded. Check your plan and billing details.' } }));
    expect(quota.finish({ code: 1, signal: null })).toEqual({
      status: 'failed',
      reason: 'budget',
      error: "codex stopped: the Flotilla model gateway refused a call for its job tree's budget (codex says: Quota exceeded. Check your plan and billing details.)",
      summary: undefined,
      sessionId: undefined,
    });
    const q = new CodexJsonParser({ pid: 1 });
    const failed = q.finish({ code: null, signal: null, spawnError: new Error('spawn codex ENOENT') });
    expect(failed).toMatchObject({ status: 'failed', reason: 'harness_start' });
    expect(failed.error).toMatch(/npm install @openai\/codex@0\.171\.0/);
  });
});
