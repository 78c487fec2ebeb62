import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { withStatementCache } from './sqlite-statement-cache.js';

describe('withStatementCache', () => {
  it('prepares each SQL text once, drops the least recently used past max, survives a schema change', () => {
    const raw = new BetterSqlite3(':memory:');
    let prepared = 0;
    const counting = { close: () => raw.close(), prepare: (sql: string) => (prepared++, raw.prepare(sql)) };
    const db = withStatementCache(counting, 2);
    db.prepare('create table t (a integer)').run([]);
    db.prepare('insert into t (a) values (?)').run([1]);
    db.prepare('insert into t (a) values (?)').run([2]);
    expect(prepared).toBe(2);
    expect(db.prepare('select a from t order by a').all([])).toEqual([{ a: 1 }, { a: 2 }]);
    expect(prepared).toBe(3); // 'create' dropped (LRU, max 2)
    db.prepare('insert into t (a) values (?)').run([3]);
    expect(prepared).toBe(3);
    raw.exec('alter table t add column b text');
    expect(db.prepare('select a from t order by a').all([])).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }]);
    db.close();
  });
});
