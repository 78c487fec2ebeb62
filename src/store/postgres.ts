import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Logger } from '../core/log.js';
import { maskUrlPasswords } from '../protocol/text.js';
import type { Database } from './schema.js';
import type { Store } from './types.js';
import { kyselyStore } from './kysely-store.js';
import { migrateToLatest } from './migrations/index.js';
import { PreparingClient } from './pg-prepared.js';
import { INGEST_POOL_SIZE, withPipelinedIngest } from './ingest-pg-pipeline.js';

/** Options for {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** Put Flotilla's tables in this schema (created if missing) instead of `public`. `[a-z_][a-z0-9_]*`, ≤ 63 chars. */
  schema?: string;
  /** Pool size (connections). Default 10; the webhook intake has its own 2 besides (ingest-pg-pipeline.ts). */
  maxConnections?: number;
  /** Where idle-connection errors (server restarts) are reported. */
  log?: Logger;
}

/**
 * Opens a PostgreSQL store at `url` (`postgres://user@host:port/db`) over a `pg` Pool and
 * applies the migrations (several processes may open at once: Kysely serialises migration
 * with an advisory lock).
 * @throws Error when the server is unreachable (the URL's password is never included),
 *   `schema` is malformed, or a migration fails.
 */
export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<Store> {
  const { schema } = opts;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`store: schema must match [a-z_][a-z0-9_]* (max 63 chars), got ${JSON.stringify(schema)}`);
  }
  const config: pg.PoolConfig = {
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    // The hot paths' statements marked PREPARE are prepared once per connection (pg-prepared.ts).
    Client: PreparingClient,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  };
  const pool = new pg.Pool({ ...config, max: opts.maxConnections ?? 10 });
  // An idle client erroring (server restart) must not crash the process; the pool replaces it.
  pool.on('error', (e) => opts.log?.warn('postgres idle connection error', { error: e.message }));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    if (schema) await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    // The schema unqualified names land in (search_path), so migration bookkeeping is looked
    // for there only, not in some other schema of the same database.
    const { rows } = await sql<{ s: string | null }>`select current_schema() as s`.execute(db);
    const current = rows[0]?.s;
    if (!current) throw new Error('no schema in search_path to create tables in');
    await migrateToLatest(db, 'postgres', current);
  } catch (e) {
    await db.destroy().catch(() => {});
    const msg = e instanceof Error ? e.message : String(e);
    throw new Error(`store: cannot open PostgreSQL at ${safeUrl(url)}: ${msg}`, { cause: e });
  }
  // Webhook batches with BEGIN and COMMIT pipelined, on connections of their own (ingest-pg-pipeline.ts),
  // kept open while idle (webhooks come in bursts: the first of one should not pay a new
  // connection and its statements' planning) without keeping the process alive.
  const ingestPool = new pg.Pool({ ...config, max: INGEST_POOL_SIZE, pipeline: true, idleTimeoutMillis: 0, allowExitOnIdle: true });
  return withPipelinedIngest(kyselyStore(db, 'postgres'), db, ingestPool, opts.log);
}

/**
 * The URL without its password (for error messages and logs): the user part's, and a
 * `?password=` / `?sslpassword=` parameter (node-postgres reads them from the connection string;
 * they were printed in clear, fresh-tester finding), by the rule every shown URL is masked with
 * (protocol/text.ts maskUrlPasswords). A text that is not a URL is not shown at all.
 */
export function safeUrl(url: string): string {
  try {
    new URL(url);
    return maskUrlPasswords(url);
  } catch {
    return '(unparseable database URL)';
  }
}
