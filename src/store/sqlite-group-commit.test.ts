import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createGroupCommit } from './sqlite-group-commit.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A WAL database with table t(id), a second connection reading it, Kysely over the first. */
function open() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-group-'));
  dirs.push(dir);
  const file = path.join(dir, 'db.sqlite');
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.exec('create table t (id integer primary key)');
  const reader = new BetterSqlite3(file, { readonly: true });
  const db = new Kysely<{ t: { id: number } }>({ dialect: new SqliteDialect({ database: sqlite }) });
  const group = createGroupCommit(sqlite, (fn) => db.connection().execute(async () => fn()));
  const insert = sqlite.prepare('insert into t (id) values (?)');
  const seen = () => (reader.prepare('select id from t order by id').all() as { id: number }[]).map((r) => r.id);
  return { sqlite, db, group, insert, seen };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('SQLite group commit (sqlite-group-commit.ts)', () => {
  it('work queued in one turn commits in ONE transaction, in order; callers resolve only after the commit', async () => {
    const { group, insert, seen, db } = open();
    const visibleDuring: number[][] = [];
    const a = group.run(() => insert.run(1).changes);
    const b = group.run(() => {
      // unit 1 is written but not committed yet: another connection does not see it
      visibleDuring.push(seen());
      return insert.run(2).changes;
    });
    expect(seen()).toEqual([]); // nothing runs before the next turn
    expect(await Promise.all([a, b])).toEqual([1, 1]);
    expect(visibleDuring).toEqual([[]]);
    expect(seen()).toEqual([1, 2]);
    await db.destroy();
  });

  it('a unit that throws is rolled back alone: its caller gets the error, the others commit', async () => {
    const { group, insert, seen, sqlite, db } = open();
    const pair = sqlite.transaction((x: number, y: number) => {
      insert.run(x);
      insert.run(y); // y = 1 again: UNIQUE constraint → the savepoint undoes x too
    });
    const ok1 = group.run(() => insert.run(1));
    const bad = group.run(() => pair(5, 1));
    const ok2 = group.run(() => insert.run(7));
    await expect(bad).rejects.toThrow(/UNIQUE/);
    await Promise.all([ok1, ok2]);
    expect(seen()).toEqual([1, 7]);
    await db.destroy();
  });

  it('never runs inside an open Kysely transaction: waits for it, keeps order, survives its rollback', async () => {
    const { group, insert, seen, db } = open();
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const kyselyTx = db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into t (id) values (100)`.execute(trx);
        await hold;
        throw new Error('roll back');
      })
      .catch((e: Error) => e.message);
    await turn(); // the Kysely transaction is open (BEGIN + insert done, waiting on `hold`)
    const first = group.run(() => (order.push('first'), insert.run(1)));
    await turn();
    await turn();
    const second = group.run(() => (order.push('second'), insert.run(2)));
    await turn();
    expect(order).toEqual([]); // both wait for the connection
    release();
    expect(await kyselyTx).toBe('roll back');
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
    expect(seen()).toEqual([1, 2]); // the rolled-back 100 is not there; ours are
    await db.destroy();
  });

  it('drain() commits what is queued at once', async () => {
    const { group, insert, seen, db } = open();
    const p = group.run(() => insert.run(3));
    await group.drain();
    expect(seen()).toEqual([3]);
    await p;
    await db.destroy();
  });
});
