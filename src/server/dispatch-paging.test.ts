import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

// A failing case from the dashboard work: with 32 or more queued jobs at the head of the
// queue that no connected runner matches, the dispatcher re-read the same page forever and
// starved the server. The jobs behind them must still be dispatched, and the server must stay
// responsive.
describe('dispatcher paging past unmatched jobs', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 200 });
  });
  afterAll(() => t.close());

  it('reaches a matching job behind 1,100 unmatched ones, and stays responsive', async () => {
    // 1,100 > one page (32 for one free slot, and > DISPATCH_BATCH = 1000): gpu jobs first.
    // Created 20 at a time: 1,100 connections at once overflow the listen backlog (ECONNRESET).
    const created: number[] = [];
    for (let i = 0; i < 1100; i += 20) {
      const batch = Array.from({ length: Math.min(20, 1100 - i) }, () => t.api('/api/jobs', { json: { agent: 'gpu-job', input: {} } }).then((r) => r.status));
      created.push(...(await Promise.all(batch)));
    }
    expect(created).toHaveLength(1100);
    expect(created.every((s) => s === 201)).toBe(true);
    const plain = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;

    const r = await FakeRunner.start(t, { name: 'plain' });
    await r.hello({ name: 'plain' });
    const t0 = Date.now();
    const a = (await r.next('job.assign')).assignment;
    expect(a.jobId).toBe(plain.id);
    expect(Date.now() - t0).toBeLessThan(5000);

    // The event loop is free: the health check answers quickly, several times.
    for (let i = 0; i < 5; i++) {
      const h0 = Date.now();
      expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
      expect(Date.now() - h0).toBeLessThan(1000);
    }
    await r.close();
  });
});
