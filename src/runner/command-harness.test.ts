import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentDefinition, type JobAssignment } from '../protocol/index.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';
import type { FakeControlPlane, FakeControlPlaneOptions } from './testdata/fake-control-plane.js';

const FAKE = fileURLToPath(new URL('./testdata/fake-command.py', import.meta.url));
/** The system Python (a pyenv shim on PATH costs ~1.5 s per start here). */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

let fleet: FakeFleet;
let tmp: string;
let cp: FakeControlPlane;
/** Requests the fake model endpoint received (for the documented ten-line example). */
let modelRequests: Array<{ headers: Record<string, unknown>; body: unknown }>;

beforeEach(async () => {
  modelRequests = [];
  const cpOpts: FakeControlPlaneOptions = {
    onHttp: (req, res) => {
      if (req.method !== 'POST' || req.url !== '/v1/messages') return false;
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        modelRequests.push({ headers: req.headers, body: JSON.parse(body) });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'hello from the model' }], stop_reason: 'end_turn', usage: { input_tokens: 9, output_tokens: 4 } }));
      });
      return true;
    },
  };
  fleet = await startFakeFleet('flotilla-cmd-', { name: 'cmd-runner', graceMs: 1000, capacity: 2 }, cpOpts);
  ({ tmp, cp } = fleet);
  mkdirSync(join(tmp, 'repos', 'proj'), { recursive: true });
  writeFileSync(join(tmp, 'repos', 'proj', 'README'), 'hi\n');
});

afterEach(() => fleet.close());

function cmdAssignment(jobId: number, input: Record<string, unknown>, agent: Record<string, unknown> = {}, over: Partial<JobAssignment> = {}): JobAssignment {
  return {
    jobId,
    rootId: jobId,
    attempt: 1,
    agent: AgentDefinition.parse({ name: 'py', harness: 'command', command: [PYTHON, FAKE], promptText: 'Do {{input.scenario}}', ...agent }),
    input,
    token: `flj_cmdtoken${jobId}secretvalue`,
    resumeSessionId: null,
    ...over,
  };
}

async function run(a: JobAssignment, timeoutMs = 20_000) {
  cp.send({ type: 'job.assign', assignment: a });
  await cp.waitFor(() => cp.finished(a.jobId, a.attempt) !== undefined, timeoutMs, `job ${a.jobId} to finish`);
  return { events: cp.events(a.jobId, a.attempt), finished: cp.finished(a.jobId, a.attempt)!.data };
}

const ws = (jobId: number) => join(tmp, 'work', 'workspaces', `job-${jobId}`);

describe('command harness', () => {
  it('gives the job input on stdin then EOF, cwd the workspace, the gateway and API in its environment; events and logs from its lines', async () => {
    const { events, finished } = await run(cmdAssignment(1, { scenario: 'basic', repo: 'proj' }, {}, { effort: { tier: 'max', model: 'claude-opus-4-6', level: 'max' } }));
    const inv = JSON.parse(readFileSync(join(ws(1), 'invocation.json'), 'utf8')) as { job: Record<string, unknown>; cwd: string; env: Record<string, string>; stdin_rest: string };
    expect(inv.cwd).toBe(ws(1));
    expect(inv.stdin_rest).toBe('');
    expect(inv.job).toEqual({
      job: { id: 1, rootId: 1, attempt: 1, branch: 'flotilla/job-1' },
      agent: { name: 'py', version: '1', model: 'claude-opus-4-6', effort: 'max', allowedTools: [], limits: { maxTurns: 50, timeoutSeconds: 1800, idleSeconds: 600 }, readOnly: false },
      input: { scenario: 'basic', repo: 'proj' },
      prompt: 'Do basic',
      workspace: ws(1),
      resumeSessionId: null,
    });
    expect(inv.env).toMatchObject({
      ANTHROPIC_BASE_URL: cp.url,
      OPENAI_BASE_URL: `${cp.url}/v1`,
      ANTHROPIC_API_KEY: 'flj_cmdtoken1secretvalue',
      OPENAI_API_KEY: 'flj_cmdtoken1secretvalue',
      FLOTILLA_URL: cp.url,
      FLOTILLA_JOB_TOKEN: 'flj_cmdtoken1secretvalue',
      FLOTILLA_JOB_ID: '1',
      HOME: join(tmp, 'work', 'homes', 'job-1'),
    });
    expect(inv.env.FLOTILLA_RUN).toMatch(/^1\.1\.[0-9a-f]{12}$/);
    const stdout = events.filter((e) => !(e.type === 'log' && e.data.stream === 'stderr'));
    expect(stdout.map((e) => e.type)).toEqual(['progress', 'progress', 'progress', 'harness.started', 'message', 'log', 'tool.call', 'tool.result', 'usage', 'job.finished']);
    const started = events.find((e) => e.type === 'harness.started');
    expect(started?.data).toMatchObject({ harness: 'command', workspace: ws(1), branch: 'flotilla/job-1' });
    expect(events).toContainEqual(expect.objectContaining({ type: 'log', data: { stream: 'stdout', line: 'a plain line' } }));
    expect(events).toContainEqual(expect.objectContaining({ type: 'log', data: { stream: 'stderr', line: 'warning on stderr' } }));
    const result = events.find((e) => e.type === 'tool.result');
    expect(result?.type === 'tool.result' && result.data.output.length).toBe(64 * 1024);
    expect(result?.type === 'tool.result' && result.data.truncated).toBe(true);
    expect(events.find((e) => e.type === 'usage')?.data).toEqual({ inputTokens: 5, outputTokens: 7, cacheReadTokens: 0, cacheWriteTokens: 0, model: 'm' });
    expect(finished).toMatchObject({ status: 'succeeded', sessionId: 'sess-py-1', result: { summary: 'all done', branch: 'flotilla/job-1', changedFiles: ['invocation.json'] } });
  });

  it('joins chunks (200 KB line, a character split across reads), reports a malformed line once and parses on', async () => {
    for (const seed of [1, 2, 3]) {
      const { events, finished } = await run(cmdAssignment(10 + seed, { scenario: 'chunks', seed }));
      expect(finished.status).toBe('succeeded');
      const msgs = events.flatMap((e) => (e.type === 'message' ? [e.data.text] : []));
      expect(msgs).toEqual(['é'.repeat(100) + 'b'.repeat(200_000), 'fin 🚀 ok']);
      const logs = events.flatMap((e) => (e.type === 'log' ? [e.data.line] : []));
      expect(logs).toHaveLength(2);
      expect(logs[0]).toMatch(/^\[malformed event line: .*JSON.*\] \{"type": "message"/);
      expect(logs[1]).toMatch(/^\[malformed event line: field data\.(id|name|input)/);
    }
  });

  it('a non-zero exit fails the job with the stderr tail; a missing executable fails at start', async () => {
    const a = await run(cmdAssignment(20, { scenario: 'fail' }));
    expect(a.finished).toMatchObject({ status: 'failed', reason: 'error', error: 'command exited with code 3: something broke' });
    const b = await run(cmdAssignment(21, {}, { command: ['/nonexistent/agent-binary'] }));
    expect(b.finished).toMatchObject({ status: 'failed', reason: 'harness_start' });
    expect(b.finished.error).toMatch(/cannot start command \/nonexistent\/agent-binary: spawn \/nonexistent\/agent-binary ENOENT/);
  });
});

describe('docs/command-harness.md', () => {
  it('the ten-line Python example runs as documented', async () => {
    const doc = readFileSync(fileURLToPath(new URL('../../docs/command-harness.md', import.meta.url)), 'utf8');
    const code = /## Ten lines of Python\n\n```python\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    expect(code.trim().split('\n').length).toBeLessThanOrEqual(10);
    const file = join(tmp, 'ten.py');
    writeFileSync(file, code);
    const { events, finished } = await run(cmdAssignment(60, { scenario: 'ten' }, { command: [PYTHON, file] }));
    expect(finished).toMatchObject({ status: 'succeeded', result: { summary: 'hello from the model' } });
    expect(events.filter((e) => e.type === 'usage' || e.type === 'message').map((e) => e.data)).toEqual([
      { inputTokens: 9, outputTokens: 4, cacheReadTokens: 0, cacheWriteTokens: 0 },
      { role: 'assistant', text: 'hello from the model' },
    ]);
    expect(modelRequests).toHaveLength(1);
    expect(modelRequests[0]?.headers['x-api-key']).toBe('flj_cmdtoken60secretvalue');
    expect(modelRequests[0]?.body).toMatchObject({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Do ten' }] });
  });
});

describe('limits (each hit is the end reason)', () => {
  it('idle: a y/n prompt nobody answers ends as blocked_on_input', async () => {
    const t0 = Date.now();
    const { events, finished } = await run(cmdAssignment(30, { scenario: 'prompt' }, { limits: { idleSeconds: 2 } }));
    expect(finished).toMatchObject({ status: 'failed', reason: 'blocked_on_input' });
    expect(finished.error).toMatch(/^blocked on input: no output and no model call for 2 s/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    // The partial prompt line (no newline) is still shown.
    expect(events).toContainEqual(expect.objectContaining({ type: 'log', data: { stream: 'stdout', line: 'Overwrite existing files? [y/N] ' } }));
  });

  it('turns: more model turns than maxTurns ends as max_turns, counted by the runner', async () => {
    const { events, finished } = await run(cmdAssignment(31, { scenario: 'turns', turns: 5 }, { limits: { maxTurns: 2 } }));
    expect(finished).toMatchObject({ status: 'failed', reason: 'max_turns', error: 'more than 2 model turns (agent limits.maxTurns)' });
    expect(events.filter((e) => e.type === 'usage').length).toBe(3);
  });

  it('wall clock: timeoutSeconds ends as timeout', async () => {
    const { finished } = await run(cmdAssignment(32, { scenario: 'sleep', seconds: 60 }, { limits: { timeoutSeconds: 1 } }));
    expect(finished).toMatchObject({ status: 'failed', reason: 'timeout' });
  });

  it('read-only: a write to the workspace fails and shows as an error tool result; HOME stays writable', async () => {
    const { events, finished } = await run(cmdAssignment(33, { scenario: 'write' }, { readOnly: true }));
    expect(finished).toMatchObject({ status: 'succeeded' });
    const r = events.find((e) => e.type === 'tool.result');
    expect(r?.data).toMatchObject({ id: 'w1', name: 'Write', isError: true });
    expect(r?.type === 'tool.result' && r.data.output).toMatch(/Read-only file system/);
    expect(existsSync(join(ws(33), 'out.txt'))).toBe(false);
    expect(existsSync(join(ws(33), '.flotilla-write-probe'))).toBe(false);
    expect(readFileSync(join(tmp, 'work', 'homes', 'job-33', 'home-write.txt'), 'utf8')).toBe('home is writable\n');
    // Without read-only the same agent writes.
    const rw = await run(cmdAssignment(34, { scenario: 'write' }));
    expect(rw.events.find((e) => e.type === 'tool.result')?.data).toMatchObject({ isError: false, output: 'wrote out.txt' });
  });
});

describe('sessions', () => {
  it('a resumed job continues in the same workspace and session; a different session reads resume failed', async () => {
    const first = await run(cmdAssignment(40, { scenario: 'resume' }));
    expect(first.finished).toMatchObject({ status: 'succeeded', sessionId: 'sess-resume-1', result: { changedFiles: ['notes.txt'] } });
    const second = await run(cmdAssignment(41, { scenario: 'resume' }, {}, { resumeSessionId: 'sess-resume-1', workspaceJobId: 40 }));
    expect(second.events.find((e) => e.type === 'message')?.data).toEqual({ role: 'assistant', text: 'found: remember me' });
    expect(second.finished).toMatchObject({ status: 'succeeded', sessionId: 'sess-resume-1', result: { branch: 'flotilla/job-40' } });
    const bad = await run(cmdAssignment(42, { scenario: 'resume', answerSession: 'sess-other' }, {}, { resumeSessionId: 'sess-resume-1', workspaceJobId: 40 }));
    expect(bad.finished).toMatchObject({ status: 'failed', reason: 'resume_failed', error: 'resume failed: asked to resume session sess-resume-1, the harness reported session sess-other' });
    const gone = await run(cmdAssignment(43, { scenario: 'resume' }, {}, { resumeSessionId: 'sess-resume-1', workspaceJobId: 999 }));
    expect(gone.finished).toMatchObject({ status: 'failed', reason: 'resume_failed' });
    expect(gone.finished.error).toMatch(/^resume failed: the workspace of job 999 is not on this runner/);
  });
});

describe('cancel', () => {
  it('kills a setsid grandchild listening on a port; the port is free and the next job can bind it', async () => {
    const port = await freePort();
    cp.send({ type: 'job.assign', assignment: cmdAssignment(50, { scenario: 'grandchild', port }) });
    await cp.waitFor(() => existsSync(join(ws(50), 'listening')), 20_000, 'the grandchild to listen');
    const grandchild = Number(readFileSync(join(ws(50), 'listening'), 'utf8'));
    expect(await canBind(port)).toBe(false);
    cp.cancel(50, 1, 'cancelled by request');
    await cp.waitFor(() => cp.finished(50) !== undefined, 10_000, 'job 50 to finish');
    expect(cp.finished(50)?.data).toMatchObject({ status: 'cancelled', reason: 'cancelled' });
    // job.finished is sent only once the whole tree is gone.
    expect(alive(grandchild)).toBe(false);
    expect(await canBind(port)).toBe(true);
    const next = cmdAssignment(51, { scenario: 'grandchild', port });
    cp.send({ type: 'job.assign', assignment: next });
    await cp.waitFor(() => existsSync(join(ws(51), 'listening')), 20_000, 'the next job to listen on the port');
    cp.cancel(51, 1, 'done');
    await cp.waitFor(() => cp.finished(51) !== undefined, 10_000, 'job 51 to finish');
    expect(await canBind(port)).toBe(true);
  });

  it('20 cancelled jobs in a row leave no process behind', async () => {
    for (let i = 0; i < 20; i++) {
      const id = 100 + i;
      const port = await freePort();
      cp.send({ type: 'job.assign', assignment: cmdAssignment(id, { scenario: 'grandchild', port }) });
      await cp.waitFor(() => existsSync(join(ws(id), 'listening')), 20_000, `job ${id} grandchild`);
      cp.cancel(id, 1, 'loop');
      await cp.waitFor(() => cp.finished(id) !== undefined, 20_000, `job ${id} to finish`);
      const pid = Number(readFileSync(join(ws(id), 'listening'), 'utf8'));
      expect(alive(pid)).toBe(false);
    }
    expect(leftovers()).toEqual([]);
  }, 120_000);
});

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\S+ \(.*\) [ZX]/.test(stat);
  } catch {
    return false;
  }
}

/** Live processes whose environment marks them as belonging to one of jobs 100..119. */
function leftovers(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || !alive(Number(name))) continue;
    let env = '';
    try {
      env = readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue;
    }
    if (/(^|\0)FLOTILLA_RUN=1(0\d|1\d)\.1\./.test(env)) out.push(Number(name));
  }
  return out;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}
