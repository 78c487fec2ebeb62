import { describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { FakeRunner, readSse, startTestServer } from './test-helpers.js';
import { startServer } from './server.js';
import { createLogger } from '../core/log.js';

describe('startServer', () => {
  it('serves events written by another replica (store poll) and ends the stream when the job ends', async () => {
    const t = await startTestServer();
    try {
      const job = (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: {} } })).json()) as Job;
      const stream = readSse(await t.api(`/api/jobs/${job.id}/events`), { timeoutMs: 6000 });
      await new Promise((r) => setTimeout(r, 200));
      // Written straight into the store, as another server process would: no bus publish here.
      const t0 = Date.now();
      await t.store.appendServerEvent(job.id, { type: 'message', data: { role: 'system', text: 'from elsewhere' } }, Date.now());
      await t.store.transitionJob(job.id, null, ['queued'], 'cancelled', Date.now(), { endReason: 'cancelled' });
      const msgs = await stream;
      expect(Date.now() - t0).toBeLessThan(2500);
      const texts = msgs.filter((m) => m.event === 'job').map((m) => JSON.parse(m.data) as { type: string; data: { text?: string } });
      expect(texts.at(-1)).toMatchObject({ type: 'message', data: { text: 'from elsewhere' } });
      expect(msgs.at(-1)).toEqual({ event: 'end', data: '{"status":"cancelled"}' });
    } finally {
      await t.close();
    }
  });

  it('releases an event stream when the client goes away', async () => {
    const lines: string[] = [];
    const t = await startTestServer({ log: createLogger('debug', (l) => lines.push(l)) });
    try {
      const job = (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: {} } })).json()) as Job;
      const ac = new AbortController();
      const res = await t.api(`/api/jobs/${job.id}/events`, { signal: ac.signal });
      const reader = res.body!.getReader();
      await reader.read();
      expect(lines.some((l) => l.includes('event stream closed'))).toBe(false);
      ac.abort();
      const deadline = Date.now() + 3000;
      while (!lines.some((l) => l.includes('event stream closed')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(lines.find((l) => l.includes('event stream closed'))).toMatch(new RegExp(`jobId=${job.id}`));
    } finally {
      await t.close();
    }
  });

  it('requeues an assigned job the runner never reports, after the heartbeat timeout', async () => {
    const t = await startTestServer({ heartbeatIntervalMs: 250, heartbeatTimeoutMs: 600, sweepIntervalMs: 60_000, dispatchIntervalMs: 100 });
    try {
      const r = await FakeRunner.start(t);
      await r.hello();
      const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
      const a1 = (await r.next('job.assign')).assignment;
      // The runner heartbeats without the job (the assignment never reached it).
      const deadline = Date.now() + 3000;
      let a2 = null;
      while (Date.now() < deadline && !a2) {
        r.send({ type: 'heartbeat', running: [] });
        await new Promise((res) => setTimeout(res, 100));
        a2 = r.frames.find((f) => f.type === 'job.assign') ?? null;
      }
      expect(a2).not.toBeNull();
      if (a2?.type === 'job.assign') expect(a2.assignment).toMatchObject({ jobId: job.id, attempt: a1.attempt + 1 });
      const notes = (await t.store.listEvents(job.id, 0, 100)).filter((e) => e.type === 'status' && /never started it/.test(e.data.message ?? ''));
      expect(notes.length).toBe(1);
      await r.close();
    } finally {
      await t.close();
    }
  });

  it('close() ends event streams and runner sockets promptly and marks runners disconnected; store stays open', async () => {
    const t = await startTestServer();
    const r = await FakeRunner.start(t);
    await r.hello();
    const job = (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: {} } })).json()) as Job;
    const res = await t.api(`/api/jobs/${job.id}/events`);
    const reading = readSse(res, { timeoutMs: 5000 }).catch(() => []);
    await new Promise((res) => setTimeout(res, 100));
    const t0 = Date.now();
    await t.server.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    await reading;
    await new Promise((res) => setTimeout(res, 50));
    expect(r.closed).toBe(true);
    expect((await t.store.getRunner(r.runnerId))?.connected).toBe(false);
    await t.server.close(); // idempotent
    await t.close();
  });

  it('fails clearly when the port is taken, is one fetch blocks, and when an agent file is bad', async () => {
    const t = await startTestServer();
    try {
      await expect(startServer({ store: t.store, dataDir: t.dataDir, port: t.server.port, agentsDirs: [], gateway: (await import('./test-helpers.js')).TEST_GATEWAY })).rejects.toThrow(
        new RegExp(`cannot listen on 127\\.0\\.0\\.1:${t.server.port}`),
      );
      await expect(startServer({ store: t.store, dataDir: t.dataDir, port: 0, agentsDirs: ['/nonexistent'], gateway: (await import('./test-helpers.js')).TEST_GATEWAY })).rejects.toThrow(
        /nonexistent/,
      );
      // Node's fetch (undici) and browsers refuse port 6000 (Fetch standard "bad ports"): refused before binding.
      await expect(fetch('http://127.0.0.1:6000/')).rejects.toThrow();
      await expect(startServer({ store: t.store, dataDir: t.dataDir, port: 6000, agentsDirs: [], gateway: (await import('./test-helpers.js')).TEST_GATEWAY })).rejects.toThrow(
        /^port 6000 is one the Fetch standard blocks: .*choose another port/,
      );
    } finally {
      await t.close();
    }
  });
});
