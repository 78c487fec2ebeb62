import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentVersionInfo, Job } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { createApiToken } from './auth.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

// Installed agents live in the store: an install through replica B is seen by replica A at
// once for an agent it did not know (job creation and dispatch re-read the store), within 2 s
// for a new version, and A's runner gets the definition and
// prompt of the version the job was created with. Skipped without PostgreSQL outside CI.
const pg = await createTestDatabase();

describe.skipIf(pg === null)('installed agents across two replicas on one PostgreSQL database', () => {
  let a: TestServer;
  let b: TestServer;
  let dir: string;
  beforeAll(async () => {
    a = await startTestServer({ databaseUrl: pg!.url, dispatchIntervalMs: 200, heartbeatIntervalMs: 200 });
    b = await startTestServer({ databaseUrl: pg!.url, dataDir: a.dataDir, dispatchIntervalMs: 200 });
    dir = await mkdtemp(join(tmpdir(), 'flotilla-agents-rep-'));
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await pg?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  async function install(prompt: string): Promise<AgentVersionInfo> {
    await mkdir(join(dir, 'shouter'), { recursive: true });
    await writeFile(join(dir, 'shouter', 'agent.yaml'), 'name: shouter\nharness: command\ncommand: [echo, hi]\nrunnerLabels: { team: x }\n');
    await writeFile(join(dir, 'shouter', 'prompt.md'), prompt);
    const res = await b.api('/api/agents/install', { method: 'POST', json: { source: dir } });
    expect(res.status).toBe(201);
    return ((await res.json()) as { installed: AgentVersionInfo[] }).installed[0]!;
  }

  it('a job created on A right after an install on B runs that version; an older job keeps its own', async () => {
    const v1 = await install('first prompt');
    const j1 = (await (await a.api('/api/jobs', { json: { agent: 'shouter', input: {} } })).json()) as Job;
    expect(j1.agentVersion).toBe(v1.version);
    const v2 = await install('second prompt');
    expect(v2.version).toMatch(/^v2-[0-9a-f]{12}$/);
    // A re-reads installed agents every 2 s: within that, new jobs on A get v2.
    const seenBy = Date.now() + 10_000;
    for (;;) {
      const body = (await (await a.api('/api/agents')).json()) as { agents: { name: string; version: string }[] };
      if (body.agents.find((x) => x.name === 'shouter')?.version === v2.version) break;
      if (Date.now() > seenBy) throw new Error('replica A did not see v2 within 10 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const j2 = (await (await a.api('/api/jobs', { json: { agent: 'shouter', input: {} } })).json()) as Job;
    expect(j2.agentVersion).toBe(v2.version);

    // Installing is for admins: a member gets 403 and nothing is stored.
    const member = await createApiToken(a.store, 'reader', 'member', Date.now());
    const refused = await a.api('/api/agents/install', { method: 'POST', token: member, json: { source: dir } });
    expect(refused.status).toBe(403);
    const list = (await (await a.api('/api/agents/versions?name=shouter')).json()) as { versions: AgentVersionInfo[] };
    expect(list.versions.map((v) => [v.version, v.current])).toEqual([[v1.version, false], [v2.version, true]]);

    const r = await FakeRunner.start(a, { name: 'on-a', labels: { team: 'x' }, capacity: 2 });
    await r.hello({ name: 'on-a', labels: { team: 'x' }, capacity: 2 });
    const got = new Map<number, { version: string; promptText: string }>();
    for (let i = 0; i < 2; i++) {
      const asg = (await r.next('job.assign', () => true, 5000)).assignment;
      got.set(asg.jobId, { version: asg.agent.version, promptText: asg.agent.promptText });
    }
    expect(got.get(j1.id)).toEqual({ version: v1.version, promptText: 'first prompt' });
    expect(got.get(j2.id)).toEqual({ version: v2.version, promptText: 'second prompt' });
    await r.close();
  }, 60_000);
});
