import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createGroupCommit } from './sqlite-group-commit.js';
import { sqliteActivityNotes } from './sqlite-activity.js';
import { openStore } from './open.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
const T = 1_800_000_000_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real SQLite table and the upsert of sqlite-fast.ts, with a count of the upserts run. */
function table() {
  const db = new Database(':memory:');
  db.exec('create table model_call_activity (job_id integer not null, attempt integer not null, in_flight integer not null, last_at integer not null, primary key (job_id, attempt))');
  const stmt = db.prepare(
    'insert into model_call_activity (job_id, attempt, in_flight, last_at) values (@jobId, @attempt, @starts, @now) on conflict (job_id, attempt) do update set ' +
      'in_flight = max(model_call_activity.in_flight - @ends, 0) + @starts, last_at = max(model_call_activity.last_at, @now)',
  );
  const counter = { writes: 0 };
  const upsert = { run: (p: unknown) => (counter.writes++, stmt.run(p as Record<string, number>)) } as unknown as Database.Statement;
  const group = createGroupCommit(db, async (fn) => fn());
  const row = (jobId: number, attempt: number) => db.prepare('select in_flight as inFlight, last_at as lastAt from model_call_activity where job_id = ? and attempt = ?').get(jobId, attempt);
  return { db, upsert, group, counter, row };
}

describe('activity notes on SQLite (sqlite-activity.ts)', () => {
  it('the first note is written in the next group commit; the notes after it within the interval are merged into one write at its end', async () => {
    const t = table();
    const notes = sqliteActivityNotes(t.upsert, t.group, 200);
    const t0 = Date.now();
    await notes.note(1, 1, 'start', T + 1);
    expect(Date.now() - t0).toBeLessThan(150); // not held for the interval
    expect(t.counter.writes).toBe(1);
    expect(t.row(1, 1)).toEqual({ inFlight: 1, lastAt: T + 1 });
    // 50 calls start within the interval: one write, at its end.
    const starts = Array.from({ length: 50 }, (_, i) => notes.note(1, 1, 'start', T + 10 + i));
    await sleep(20);
    expect(t.counter.writes).toBe(1); // still waiting for the interval
    expect(t.row(1, 1)).toEqual({ inFlight: 1, lastAt: T + 1 });
    await Promise.all(starts);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(t.counter.writes).toBe(2);
    expect(t.row(1, 1)).toEqual({ inFlight: 51, lastAt: T + 59 });
    // their ends (issued once the starts are written, as the gateway does) and one more start: one write
    await Promise.all([...Array.from({ length: 50 }, (_, i) => notes.note(1, 1, 'end', T + 100 + i)), notes.note(1, 1, 'start', T + 120)]);
    expect(t.counter.writes).toBe(3);
    expect(t.row(1, 1)).toEqual({ inFlight: 2, lastAt: T + 149 });
  });

  it('each (job, attempt) has its own interval; flush() writes what is pending at once', async () => {
    const t = table();
    const notes = sqliteActivityNotes(t.upsert, t.group, 60_000);
    await notes.note(1, 1, 'start', T);
    await notes.note(2, 1, 'start', T); // another job: not held by job 1's interval
    await notes.note(1, 2, 'start', T); // another attempt: the same
    expect(t.counter.writes).toBe(3);
    const held = notes.note(1, 1, 'end', T + 5);
    await sleep(10);
    expect(t.row(1, 1)).toEqual({ inFlight: 1, lastAt: T });
    await notes.flush();
    await held;
    expect(t.row(1, 1)).toEqual({ inFlight: 0, lastAt: T + 5 });
    expect(t.counter.writes).toBe(4);
  });

  it('a write that fails rejects every note it carried', async () => {
    const t = table();
    const notes = sqliteActivityNotes(t.upsert, t.group, 50);
    await notes.note(1, 1, 'start', T);
    t.db.exec('drop table model_call_activity');
    const both = [notes.note(1, 1, 'end', T + 1), notes.note(1, 1, 'start', T + 2)];
    for (const p of both) await expect(p).rejects.toThrow(/no such table/);
  });

  it('the store reads its own notes at once and writes them before it closes, however recent the last write', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-activity-'));
    dirs.push(dir);
    let s = await openStore({ dataDir: dir });
    const job = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now: T });
    await s.noteModelCall(job.id, 1, 'start', T + 1);
    // within the interval of that write: not awaited, so pending when the read comes
    void s.noteModelCall(job.id, 1, 'start', T + 2);
    void s.noteModelCall(job.id, 1, 'end', T + 3);
    expect(await s.modelCallActivity([{ jobId: job.id, attempt: 1 }])).toEqual([{ jobId: job.id, attempt: 1, inFlight: 1, lastAt: T + 3 }]);
    void s.noteModelCall(job.id, 1, 'end', T + 4);
    await s.close();
    s = await openStore({ dataDir: dir });
    expect(await s.modelCallActivity([{ jobId: job.id, attempt: 1 }])).toEqual([{ jobId: job.id, attempt: 1, inFlight: 0, lastAt: T + 4 }]);
    await s.close();
  });
});
