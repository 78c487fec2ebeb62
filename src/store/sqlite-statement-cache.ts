import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Kysely's SQLite driver prepares every query anew; preparing costs as much as running most of
 * ours (measured in bench/dispatch: about 45% of SQL time per dispatched job). This wraps a
 * better-sqlite3 handle so that each distinct SQL text is prepared once and reused (at most
 * `max` statements, least recently used dropped first). Safe because Kysely runs one query at
 * a time on the single connection and we never stream (`iterate`) — a statement is never in
 * use twice at once. SQLite re-prepares a cached statement by itself after a schema change.
 */
export function withStatementCache(db: SqliteDatabase, max = 256): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => {
      cache.clear();
      return db.close();
    },
    prepare(sql: string): SqliteStatement {
      let stmt = cache.get(sql);
      if (stmt) {
        cache.delete(sql); // re-insert: most recently used last
      } else {
        stmt = db.prepare(sql);
        if (cache.size >= max) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, stmt);
      return stmt;
    },
  };
}
