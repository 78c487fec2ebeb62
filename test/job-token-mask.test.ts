/**
 * A job's token never reaches its transcript: a real control plane and runner run a `command`
 * agent that prints its environment and its token on stdout, stderr, in an assistant message, a
 * tool call and its result summary. What anyone who can read the job gets over the API
 * (`GET /api/jobs/{id}/events`, `GET /api/jobs/{id}`) holds `flj_***` and never the token.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/open.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { loadGatewayConfig } from '../src/gateway/config.js';
import { FlotillaClient } from '../src/client/client.js';
import type { Store } from '../src/store/types.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

const SCRIPT = [
  'cat >/dev/null',
  'printf %s "$FLOTILLA_JOB_TOKEN" > "$HOME/token.txt"',
  'env',
  'echo "stderr has $FLOTILLA_JOB_TOKEN" >&2',
  'printf \'{"type":"message","data":{"role":"assistant","text":"my key is %s"}}\\n\' "$OPENAI_API_KEY"',
  'printf \'{"type":"tool.call","data":{"id":"t1","name":"Bash","input":{"command":"echo %s","argv":["x","%s"]}}}\\n\' "$ANTHROPIC_API_KEY" "$FLOTILLA_JOB_TOKEN"',
  'printf \'{"type":"result","data":{"summary":"done; token %s"}}\\n\' "$FLOTILLA_JOB_TOKEN"',
].join('\n');

const AGENT_YAML = `name: env-echo
version: "1"
harness: command
command: [/bin/sh, -c, ${JSON.stringify(SCRIPT)}]
model: claude-sonnet-4-5
prompt: prompt.md
limits:
  maxTurns: 5
  timeoutSeconds: 60
  defaultBudgetUsd: 1
`;

const INPUT_ECHO_YAML = `name: input-echo
version: "1"
harness: command
command: [/bin/sh, -c, "cat"]
model: claude-sonnet-4-5
prompt: prompt.md
inputSchema: { type: object, properties: { note: { type: string } } }
limits: { maxTurns: 5, timeoutSeconds: 60, defaultBudgetUsd: 1 }
`;

describe('the job token is masked in the events the runner uploads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-tokmask-'));
  let store: Store;
  let server: RunningServer;
  let runner: RunningRunner;
  let client: FlotillaClient;

  beforeAll(async () => {
    const agents = join(dir, 'agents');
    mkdirSync(join(agents, 'env-echo'), { recursive: true });
    writeFileSync(join(agents, 'env-echo', 'agent.yaml'), AGENT_YAML);
    writeFileSync(join(agents, 'env-echo', 'prompt.md'), 'Print your environment.\n');
    mkdirSync(join(agents, 'input-echo'), { recursive: true });
    writeFileSync(join(agents, 'input-echo', 'agent.yaml'), INPUT_ECHO_YAML);
    writeFileSync(join(agents, 'input-echo', 'prompt.md'), 'Echo your input.\n');
    store = await openStore({ dataDir: join(dir, 'db') });
    server = await startServer({ store, dataDir: dir, port: 0, agentsDirs: [agents], gateway: loadGatewayConfig({ ANTHROPIC_API_KEY: '' }), dispatchIntervalMs: 100 });
    client = new FlotillaClient({ url: server.url, token: server.adminToken! });
    runner = await startRunner({
      serverUrl: server.url,
      registrationToken: await createRegistrationToken(store, {}, 60_000, Date.now()),
      workDir: join(dir, 'runner'),
      name: 'mask-runner',
      repoBaseDir: dir,
      graceMs: 1000,
    });
  }, 60_000);

  /** Job `id` once it has ended (within 60 s). */
  const ended = async (id: number) => {
    const deadline = Date.now() + 60_000;
    let job = await client.getJob(id);
    while (!['succeeded', 'failed', 'cancelled', 'lost'].includes(job.status) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      job = await client.getJob(id);
    }
    return job;
  };

  afterAll(async () => {
    await runner?.stop();
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stdout, stderr, messages, tool calls and the result summary hold flj_*** and never the token', async () => {
    const created = await client.createJob({ agent: 'env-echo', input: {}, priority: 0 });
    const job = await ended(created.id);
    expect(job.status, job.error ?? '').toBe('succeeded');
    const token = readFileSync(join(dir, 'runner', 'homes', `job-${created.id}`, 'token.txt'), 'utf8');
    expect(token).toMatch(/^flj_[A-Za-z0-9_-]{43}$/);
    const secret = token.slice('flj_'.length);

    const auth = { authorization: `Bearer ${server.adminToken!}` };
    const sse = await (await fetch(`${server.url}/api/jobs/${created.id}/events`, { headers: auth })).text();
    const jobText = await (await fetch(`${server.url}/api/jobs/${created.id}`, { headers: auth })).text();
    expect(sse).toContain('event: end');
    for (const text of [sse, jobText]) expect(text).not.toContain(secret);

    const events = await store.listEvents(created.id, 0, 1000);
    const lines = events.flatMap((e) => (e.type === 'log' ? [`${e.data.stream}: ${e.data.line}`] : []));
    expect(lines).toContain('stdout: FLOTILLA_JOB_TOKEN=flj_***');
    expect(lines).toContain('stdout: OPENAI_API_KEY=flj_***');
    expect(lines).toContain('stderr: stderr has flj_***');
    expect(events).toContainEqual(expect.objectContaining({ type: 'message', data: { role: 'assistant', text: 'my key is flj_***' } }));
    expect(events).toContainEqual(expect.objectContaining({ type: 'tool.call', data: expect.objectContaining({ input: { command: 'echo flj_***', argv: ['x', 'flj_***'] } }) }));
    expect(job.result?.summary).toBe('done; token flj_***');
    expect(JSON.stringify(events)).not.toContain(secret);
  }, 90_000);

  it('a password in a URL of the job input (and an http user token) is masked in the transcript too', async () => {
    const note = 'clone https://bot:pw-Zx81secret@git.example.com/x.git and https://ghp_tokenABCDEF123@github.com/y.git';
    const created = await client.createJob({ agent: 'input-echo', input: { note }, priority: 0 });
    const job = await ended(created.id);
    expect(job.status, job.error ?? '').toBe('succeeded');
    const events = JSON.stringify(await store.listEvents(created.id, 0, 1000));
    // The command printed its stdin (the job, with its input) as log lines.
    expect(events).toContain('git.example.com/x.git');
    expect(events).not.toContain('pw-Zx81secret');
    expect(events).not.toContain('ghp_tokenABCDEF123');
  }, 90_000);
});
