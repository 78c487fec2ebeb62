import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from './open.js';
import { CHECKPOINT_INTERVAL_MS, FALLBACK_AUTOCHECKPOINT_PAGES, RESTART_FRAMES, startCheckpointer } from './sqlite-checkpoint.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-ckpt-'));
  dirs.push(dir);
  return dir;
}

/** Polls `f` every 20 ms until it is true or `ms` passed; returns its last value. */
async function eventually(f: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return f();
}

describe('WAL checkpoints off the event loop (sqlite-checkpoint.ts)', () => {
  it('pages committed on the main connection reach the database file through the thread, below the main connection\'s own threshold', async () => {
    const file = path.join(tempDir(), 'db.sqlite');
    const sqlite = new BetterSqlite3(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    const ckpt = startCheckpointer(sqlite, file);
    // The store's connection would checkpoint only past FALLBACK_AUTOCHECKPOINT_PAGES (20,000) itself.
    expect(sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(FALLBACK_AUTOCHECKPOINT_PAGES);
    sqlite.exec('create table t (x blob)');
    // 2,000 rows of 3,000 bytes: one page each (4 KiB pages), about 8 MB of WAL, well under 20,000 pages.
    const ins = sqlite.prepare('insert into t (x) values (randomblob(3000))');
    sqlite.transaction(() => {
      for (let i = 0; i < 2000; i++) ins.run();
    })();
    // The database file holds them only once a checkpoint copied them there: 2,000 pages ≥ 8,000,000 bytes.
    expect(await eventually(() => fs.statSync(file).size >= 2000 * 4096, 5000)).toBe(true);
    await ckpt.stop();
    await ckpt.stop(); // twice is fine
    sqlite.close();
    // The thread's connection was closed first, so the store's (the last one) removed the WAL.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const again = new BetterSqlite3(file);
    expect(again.prepare('select count(*) as n from t').get()).toEqual({ n: 2000 });
    again.close();
  });

  it('a WAL wholly copied by the thread is started over by the next write (so it stays far from the fallback threshold)', async () => {
    const file = path.join(tempDir(), 'db.sqlite');
    const sqlite = new BetterSqlite3(file);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    const ckpt = startCheckpointer(sqlite, file);
    sqlite.exec('create table t (x blob)');
    const ins = sqlite.prepare('insert into t (x) values (randomblob(3000))');
    // 50 transactions of 100 one-page rows: about 5,000 frames, past RESTART_FRAMES (4,000), under the fallback (20,000).
    for (let i = 0; i < 50; i++) sqlite.transaction(() => Array.from({ length: 100 }, () => ins.run()))();
    expect(RESTART_FRAMES).toBeLessThan(5000);
    expect(await eventually(() => fs.statSync(file).size >= 5000 * 4096, 5000)).toBe(true);
    // Wholly copied: this write restarts the WAL, which then holds only this transaction's few frames.
    await new Promise((r) => setTimeout(r, 3 * CHECKPOINT_INTERVAL_MS));
    ins.run();
    const [after] = sqlite.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
    expect(after!.log).toBeLessThan(10);
    await ckpt.stop();
    sqlite.close();
  });

  it('a thread that cannot run hands checkpoints back to SQLite\'s default (1,000 pages)', async () => {
    const file = path.join(tempDir(), 'db.sqlite');
    const sqlite = new BetterSqlite3(file);
    sqlite.pragma('journal_mode = WAL');
    const ckpt = startCheckpointer(sqlite, path.join(path.dirname(file), 'missing.sqlite')); // fileMustExist: the thread fails
    expect(await eventually(() => sqlite.pragma('wal_autocheckpoint', { simple: true }) === 1000, 5000)).toBe(true);
    await ckpt.stop();
    sqlite.close();
  });

  it('a store over a data folder leaves no WAL behind when closed', async () => {
    const dir = path.join(tempDir(), 'data');
    const s = await openStore({ dataDir: dir });
    await s.createApiToken({ name: 'a', role: 'member', tokenHash: 'a'.repeat(64), now: 1_800_000_000_000 });
    await s.close();
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('-wal'))).toEqual([]);
  });
});
