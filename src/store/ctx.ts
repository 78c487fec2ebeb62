import type { Kysely, Transaction } from 'kysely';
import type { Codec } from './codec.js';
import type { Database, SqlDialect } from './schema.js';

/** What every repository function needs: the Kysely handle and the engine's codec. */
export interface StoreCtx {
  readonly db: Kysely<Database>;
  readonly codec: Codec;
  readonly dialect: SqlDialect;
}

/**
 * Reads the job's current attempt inside `trx`, locking the job row on PostgreSQL
 * (`SELECT ... FOR UPDATE`) so that concurrent writers to the same job (event appends)
 * serialise. SQLite needs no lock: it has one writer. Null when the job does not exist.
 */
export async function lockJob(trx: Transaction<Database>, dialect: SqlDialect, jobId: number): Promise<{ attempt: number } | null> {
  let q = trx.selectFrom('jobs').select(['attempt']).where('id', '=', jobId);
  if (dialect === 'postgres') q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row ? { attempt: Number(row.attempt) } : null;
}

/** @throws Error `<what> must be an integer...` unless `v` is a safe integer >= min. */
export function assertInt(what: string, v: unknown, min = Number.MIN_SAFE_INTEGER): asserts v is number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new Error(`store: ${what} must be an integer${min > Number.MIN_SAFE_INTEGER ? ` >= ${min}` : ''}, got ${JSON.stringify(v)}`);
  }
}

/** Splits `items` into arrays of at most `size` (keeps bound-parameter counts under engine limits). */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
