/**
 * Issue 4, idle limit: "no output AND no model call for N seconds". A Python command agent
 * (standard library only) that makes one model call slower than its idleSeconds and prints
 * nothing meanwhile is NOT ended; one that prints a y/n prompt and waits is ended as
 * `blocked_on_input`. The gateway notes the call in the store, the hub answers the runner's
 * heartbeats with `job.activity`: on SQLite (one server), and on PostgreSQL with the call
 * served by replica B while the runner is connected to replica A.
 */
import { createServer, type Server } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/open.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { startServer, type RunningServer } from '../src/server/server.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { loadGatewayConfig } from '../src/gateway/config.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { FlotillaClient } from '../src/client/client.js';
import type { Store } from '../src/store/types.js';
import type { Job, JobEvent } from '../src/protocol/index.js';
import { tempDir, waitFor } from './helpers.js';

/** The agents' idle limit, seconds. */
const IDLE_SECONDS = 2;
/** How long the fake upstream takes to answer one call: well past the idle limit, ms. */
const SLOW_CALL_MS = 3 * IDLE_SECONDS * 1000;

const SLOW_AGENT_PY = `import json, os, sys, urllib.request
inp = json.load(sys.stdin)
base = (inp.get("gateway") or os.environ["ANTHROPIC_BASE_URL"]).rstrip("/")
body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
req = urllib.request.Request(base + "/v1/messages", data=json.dumps(body).encode(), headers={
    "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": os.environ["ANTHROPIC_API_KEY"]})
reply = json.load(urllib.request.urlopen(req, timeout=120))
print(json.dumps({"type": "message", "data": {"role": "assistant", "text": reply["content"][0]["text"]}}))
`;

// A question on the terminal nobody answers: the agent blocks on a read that never returns.
const PROMPT_AGENT_PY = `import os, sys
sys.stdin.read()
sys.stdout.write("Overwrite existing files? [y/N] ")
sys.stdout.flush()
r, w = os.pipe()
os.read(r, 1)
`;

// A parent that starts a child (labelled for a pool no runner is in: it stays queued) and
// waits silently for three idle limits, polling it over the API as an orchestrator does; then
// cancels it and stays silent for half an idle limit more after it ended.
const WAITS_CHILD_PY = `import json, os, sys, time, urllib.request
sys.stdin.read()
url, tok = os.environ["FLOTILLA_URL"], os.environ["FLOTILLA_JOB_TOKEN"]
def api(method, path, body=None):
    req = urllib.request.Request(url + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": "Bearer " + tok, "content-type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=30))
child = api("POST", "/api/jobs", {"agent": "yn-prompt", "input": {}, "labels": {"pool": "nowhere"}})
end = time.time() + ${3 * IDLE_SECONDS}
while time.time() < end:
    time.sleep(0.5)
    api("GET", "/api/jobs/%d" % child["id"])
api("POST", "/api/jobs/%d/cancel" % child["id"])
while api("GET", "/api/jobs/%d" % child["id"])["status"] != "cancelled":
    time.sleep(0.2)
# silent a while after the child ended, within the idle limit counted from its end
time.sleep(${IDLE_SECONDS / 2})
print(json.dumps({"type": "message", "data": {"role": "assistant", "text": "child %d waited for" % child["id"]}}))
`;

function agentYaml(name: string): string {
  return [
    `name: ${name}`,
    'version: "1"',
    'harness: command',
    'command: [python3, ./agent.py]',
    'model: claude-sonnet-4-5',
    'prompt: prompt.md',
    'limits:',
    '  maxTurns: 5',
    '  timeoutSeconds: 60',
    `  idleSeconds: ${IDLE_SECONDS}`,
    '  defaultBudgetUsd: 1',
    'inputSchema:',
    '  type: object',
    '  additionalProperties: false',
    '  properties:',
    '    gateway: { type: string }',
    '',
  ].join('\n');
}

function writeAgents(dir: string): void {
  for (const [name, py] of [['slow-call', SLOW_AGENT_PY], ['yn-prompt', PROMPT_AGENT_PY], ['waits-child', WAITS_CHILD_PY]] as const) {
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, 'agent.yaml'), agentYaml(name));
    writeFileSync(join(dir, name, 'prompt.md'), 'Say hi.\n');
    writeFileSync(join(dir, name, 'agent.py'), py);
  }
}

/** An Anthropic-shaped upstream that answers every call after SLOW_CALL_MS. */
async function slowUpstream(): Promise<{ url: string; calls: { ms: number }[]; close(): Promise<void> }> {
  const calls: { ms: number }[] = [];
  const server: Server = createServer((req, res) => {
    const t0 = Date.now();
    req.resume();
    req.on('end', () => {
      setTimeout(() => {
        calls.push({ ms: Date.now() - t0 });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_slow', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi after a long think' }], stop_reason: 'end_turn', usage: { input_tokens: 12, output_tokens: 7 } }));
      }, SLOW_CALL_MS);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return { url: `http://127.0.0.1:${addr.port}`, calls, close: () => new Promise((r) => server.close(() => r())) };
}

interface Replica {
  store: Store;
  server: RunningServer;
}

async function startReplica(dataDir: string, agentsDir: string, upstream: string, databaseUrl?: string): Promise<Replica> {
  const store = await openStore({ dataDir: join(dataDir, 'db'), ...(databaseUrl ? { databaseUrl } : {}) });
  const server = await startServer({
    store,
    dataDir,
    port: 0,
    agentsDirs: [agentsDir],
    gateway: loadGatewayConfig({ ANTHROPIC_API_KEY: 'sk-upstream-test', ANTHROPIC_BASE_URL: upstream, FLOTILLA_GATEWAY_RETRIES: '0' }),
    heartbeatIntervalMs: 500,
    heartbeatTimeoutMs: 10_000,
    dispatchIntervalMs: 200,
  });
  return { store, server };
}

async function runToEnd(client: FlotillaClient, store: Store, agent: string, input: Record<string, unknown> = {}): Promise<{ job: Job; events: JobEvent[] }> {
  const created = await client.createJob({ agent, input, priority: 0 });
  const job = await waitFor(`job ${created.id} to end`, async () => {
    const j = await client.getJob(created.id);
    return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
  }, 60_000, 100);
  return { job, events: await store.listEvents(created.id, 0, 1000) };
}

const pg = await createTestDatabase();

for (const mode of ['sqlite', 'postgres, gateway on another replica'] as const) {
  const onPg = mode !== 'sqlite';
  describe.skipIf(onPg && pg === null)(`idle limit counts model calls (${mode})`, () => {
    const dir = tempDir('flotilla-idle-');
    let upstream: Awaited<ReturnType<typeof slowUpstream>>;
    let a: Replica;
    let b: Replica | null = null;
    let runner: RunningRunner;
    let client: FlotillaClient;
    beforeAll(async () => {
      const agentsDir = join(dir.path, 'agents');
      writeAgents(agentsDir);
      upstream = await slowUpstream();
      a = await startReplica(join(dir.path, 'a'), agentsDir, upstream.url, onPg ? pg!.url : undefined);
      // Replica B shares A's database (and data folder, for the admin token).
      if (onPg) b = await startReplica(join(dir.path, 'a'), agentsDir, upstream.url, pg!.url);
      client = new FlotillaClient({ url: a.server.url, token: a.server.adminToken! });
      runner = await startRunner({
        serverUrl: a.server.url,
        registrationToken: await createRegistrationToken(a.store, {}, 60_000, Date.now()),
        workDir: join(dir.path, 'runner'),
        name: 'idle-runner',
        repoBaseDir: dir.path,
        graceMs: 1000,
      });
    }, 60_000);
    afterAll(async () => {
      await runner?.stop();
      for (const r of [b, a]) {
        await r?.server.close();
        await r?.store.close();
      }
      await upstream?.close();
      dir.cleanup();
    });

    it(`a model call slower than idleSeconds, with no output meanwhile, does not end the job${onPg ? ' (call served by replica B, runner on A)' : ''}`, async () => {
      const input = b ? { gateway: b.server.url } : {};
      const { job, events } = await runToEnd(client, a.store, 'slow-call', input);
      expect(job.status, job.error ?? '').toBe('succeeded');
      expect(events.filter((e) => e.type === 'message').map((e) => e.type === 'message' && e.data.text)).toEqual(['hi after a long think']);
      // The call really was silent for longer than the idle limit (three times it).
      expect(upstream.calls.at(-1)?.ms).toBeGreaterThanOrEqual(SLOW_CALL_MS - 50);
      expect(job.usage).toMatchObject({ modelCalls: 1, inputTokens: 12, outputTokens: 7 });
      // The gateway noted the call's start and end: nothing in flight now.
      const [act] = await a.store.modelCallActivity([{ jobId: job.id, attempt: job.attempt }]);
      expect(act).toMatchObject({ jobId: job.id, inFlight: 0 });
    }, 90_000);

    it('a parent waiting on a child that has not ended (no output, no model call of its own) is not ended as blocked_on_input', async () => {
      const { job, events } = await runToEnd(client, a.store, 'waits-child');
      expect(job.status, job.error ?? '').toBe('succeeded');
      const text = events.filter((e) => e.type === 'message').map((e) => e.type === 'message' && e.data.text);
      expect(text).toEqual([expect.stringMatching(/^child \d+ waited for$/)]);
      const child = Number(/\d+/.exec(String(text[0]))![0]);
      expect(await a.store.getJob(child)).toMatchObject({ parentId: job.id, status: 'cancelled' });
    }, 90_000);

    it('a y/n prompt nobody answers (no output, no model call) still ends as blocked_on_input', async () => {
      const t0 = Date.now();
      const { job, events } = await runToEnd(client, a.store, 'yn-prompt');
      expect(job).toMatchObject({ status: 'failed', endReason: 'blocked_on_input' });
      expect(job.error).toMatch(/^blocked on input: no output and no model call for 2 s/);
      expect(events).toContainEqual(expect.objectContaining({ type: 'log', data: { stream: 'stdout', line: 'Overwrite existing files? [y/N] ' } }));
      // Ended after the limit, and not much later (generous slack for a loaded machine).
      expect(Date.now() - t0).toBeGreaterThanOrEqual(IDLE_SECONDS * 1000);
      expect(Date.now() - t0).toBeLessThan(30_000);
    }, 90_000);
  });
}

afterAll(async () => {
  await pg?.drop();
});
