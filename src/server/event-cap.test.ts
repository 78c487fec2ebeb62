// The per-event size cap where the server stores events (protocol/events.ts
// MAX_EVENT_DATA_BYTES, store/frame-cap.ts), through the real hub on SQLite and PostgreSQL: a
// runner that sends ~15 MB events (a frame may be 16 MiB) has its frames accepted and acked,
// and each event is stored and served cut to 256 KiB, type, rseq and the rest of the event kept.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EVENT_DATA_BYTES, type Job, type JobEventPage } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

const at = () => new Date().toISOString();
const BIG = 15_000_000;
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('event size cap through the hub (%s)', (_dialect, databaseUrl) => {
  let t: TestServer;
  const runners: FakeRunner[] = [];
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 200, ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) await r.close();
  });
  afterAll(() => t.close());

  it('15 MB events are accepted, acked and stored cut to the cap with a marker; the job row’s error too', async () => {
    const r = await FakeRunner.start(t);
    runners.push(r);
    await r.hello();
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } });
    const job = (await res.json()) as Job;
    const { attempt } = (await r.next('job.assign')).assignment;
    r.send({ type: 'job.events', jobId: job.id, attempt, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'command', pid: 7 } }, { rseq: 2, at: at(), type: 'log', data: { stream: 'stdout', line: 'L'.repeat(BIG) } }] });
    expect((await r.next('ack', () => true, 20_000)).upTo).toBe(2);
    r.send({ type: 'job.events', jobId: job.id, attempt, events: [{ rseq: 3, at: at(), type: 'tool.result', data: { id: 'toolu_9', name: 'Bash', output: 'O'.repeat(BIG), isError: true } }] });
    expect((await r.next('ack', () => true, 20_000)).upTo).toBe(3);
    r.send({ type: 'job.events', jobId: job.id, attempt, events: [{ rseq: 4, at: at(), type: 'job.finished', data: { status: 'failed', error: 'E'.repeat(BIG), result: { summary: 'gave up' } } }] });
    expect((await r.next('ack', () => true, 20_000)).upTo).toBe(4);
    expect(r.closed).toBe(false);

    const page = (await (await t.api(`/api/jobs/${job.id}/events/page?limit=100`)).json()) as JobEventPage;
    const ofType = (type: string) => page.events.find((e) => e.type === type)!;
    const log = ofType('log') as Extract<JobEventPage['events'][number], { type: 'log' }>;
    expect(log.data.stream).toBe('stdout');
    expect(log.data.line).toMatch(/^L+… \[truncated 14\.1 MiB\]$/);
    expect(bytes(log.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    expect(bytes(log.data)).toBeGreaterThan(MAX_EVENT_DATA_BYTES - 100);
    const result = ofType('tool.result') as Extract<JobEventPage['events'][number], { type: 'tool.result' }>;
    expect(result.data).toMatchObject({ id: 'toolu_9', name: 'Bash', isError: true, truncated: true });
    expect(result.data.output).toMatch(/^O+… \[truncated 14\.1 MiB\]$/);
    expect(bytes(result.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    const finished = ofType('job.finished') as Extract<JobEventPage['events'][number], { type: 'job.finished' }>;
    expect(finished.data).toMatchObject({ status: 'failed', result: { summary: 'gave up' } });
    expect(finished.data.error).toMatch(/^E+… \[truncated 14\.1 MiB\]$/);
    expect(bytes(finished.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    // The whole page is a few hundred KiB, not 45 MB.
    expect(bytes(page)).toBeLessThan(4 * MAX_EVENT_DATA_BYTES);

    const got = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
    expect(got.status).toBe('failed');
    expect(got.error).toMatch(/^E+… \[truncated 14\.1 MiB\]$/);
    expect(Buffer.byteLength(got.error!)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
  }, 60_000);
});
