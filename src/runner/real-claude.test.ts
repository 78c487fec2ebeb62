import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunner, type RunningRunner } from './runner.js';
import { assignment, FakeControlPlane } from './testdata/fake-control-plane.js';
import { scriptedModel } from './testdata/scripted-model.js';

// The real Claude Code CLI (the installed @anthropic-ai/claude-code) driven by the runner,
// against a scripted model served at the fake control plane's root (as the gateway is).
const model = scriptedModel([
  {
    content: [
      { type: 'text', text: 'Writing the file.' },
      { type: 'tool_use', id: 'toolu_a1', name: 'Bash', input: { command: 'cat calc.js && echo made > made.txt && git add made.txt && git commit -qm "add made.txt"' } },
    ],
    usage: { input: 120, output: 30, cacheRead: 0, cacheWrite: 40 },
  },
  { content: [{ type: 'text', text: 'Done: committed made.txt.' }], usage: { input: 180, output: 12, cacheRead: 40, cacheWrite: 0 } },
]);

let tmp: string;
let cp: FakeControlPlane;
let runner: RunningRunner;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'flotilla-real-claude-'));
  mkdirSync(join(tmp, 'proj'));
  writeFileSync(join(tmp, 'proj', 'calc.js'), 'export const add = (a, b) => a + b;\n');
  cp = await new FakeControlPlane({ onHttp: model.handle }).listen();
  runner = await startRunner({ serverUrl: cp.url, registrationToken: 'flr_testregistrationtoken', workDir: join(tmp, 'work'), repoBaseDir: tmp, graceMs: 2000 });
});

afterAll(async () => {
  await runner?.stop();
  await cp?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('real Claude Code CLI', () => {
  it('runs a job end to end: tool call, result, commit, usage, restricted tools, job token as API key', async () => {
    cp.send({ type: 'job.assign', assignment: assignment(21, 'Add made.txt to {{input.repo}}', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(21) !== undefined, 60_000, 'job 21 finished');
    const events = cp.events(21);
    const fin = cp.finished(21)?.data;
    expect(fin?.status, JSON.stringify(fin)).toBe('succeeded');
    const ws = join(tmp, 'work', 'workspaces', 'job-21');
    expect(fin?.result).toEqual({
      summary: 'Done: committed made.txt.',
      branch: 'flotilla/job-21',
      commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ws, encoding: 'utf8' }).trim(),
      changedFiles: ['made.txt'],
    });
    expect(readFileSync(join(ws, 'made.txt'), 'utf8')).toBe('made\n');
    const started = events.find((e) => e.type === 'harness.started');
    expect(started?.data).toMatchObject({ harness: 'claude-code', workspace: ws, branch: 'flotilla/job-21' });
    expect(fin?.sessionId).toBe((started?.data as { sessionId?: string }).sessionId);
    const main = events.filter((e) => ['message', 'tool.call', 'tool.result'].includes(e.type)).map((e) => e.data);
    expect(main).toEqual([
      { role: 'assistant', text: 'Writing the file.' },
      { id: 'toolu_a1', name: 'Bash', input: { command: 'cat calc.js && echo made > made.txt && git add made.txt && git commit -qm "add made.txt"' } },
      { id: 'toolu_a1', name: 'Bash', output: 'export const add = (a, b) => a + b;', isError: false },
      { role: 'assistant', text: 'Done: committed made.txt.' },
    ]);
    // Claude Code reports the usage of message_start (output tokens not final): input and cache numbers match the script.
    const usage = events.flatMap((e) => (e.type === 'usage' ? [e.data] : []));
    expect(usage.map((u) => [u.inputTokens, u.cacheReadTokens, u.cacheWriteTokens])).toEqual([[120, 0, 40], [180, 40, 0]]);
    expect(model.requests.length).toBe(2);
    for (const r of model.requests) {
      expect(r.headers['x-api-key']).toBe('flj_jobtoken21secretvalue');
      expect(r.body.tools?.map((t) => t.name).sort()).toEqual(['Bash', 'Read']);
      expect(r.body.model).toBe('claude-sonnet-4-5');
    }
  });
});
