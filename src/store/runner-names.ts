import { sql, type Transaction } from 'kysely';
import { freeRunnerName, runnerNamePrefix } from '../core/runner-names.js';
import { num } from './codec.js';
import type { StoreCtx } from './ctx.js';
import type { Database } from './schema.js';
import type { RunnerRow } from './types.js';
import { createRunner } from './runners.js';

/** What {@link registerRunner} takes: createRunner's fields; `name` is the one asked for. */
export type NewRunner = Parameters<typeof createRunner>[1];

/** Outcome of {@link renameRunner}. */
export type RunnerRename = { renamed: true } | { renamed: false; reason: 'unknown' } | { renamed: false; reason: 'taken'; takenBy: number };

/**
 * Serialises name changes (PostgreSQL: a transaction-scoped advisory lock; SQLite has one
 * writer) so two registrations asking for the same name at once never both get it.
 */
async function lockNames(c: StoreCtx, trx: Transaction<Database>): Promise<void> {
  if (c.dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext('flotilla.runner_names'))`.execute(trx);
}

/**
 * Registers a runner under the name rule (core/runner-names.ts): `r.name` when no runner that
 * is not revoked has it, else the first free `NAME-2`, `NAME-3`, ... One transaction.
 * @returns the new runner (its `name` is the one it got).
 * @throws as createRunner (a duplicate credential hash, bad capacity).
 */
export async function registerRunner(c: StoreCtx, r: NewRunner): Promise<RunnerRow> {
  return c.db.transaction().execute(async (trx) => {
    await lockNames(c, trx);
    const rows = await trx
      .selectFrom('runners')
      .select('name')
      .where('revoked_at', 'is', null)
      .where('name', 'like', `${runnerNamePrefix(r.name)}%`)
      .execute();
    const name = freeRunnerName(r.name, new Set(rows.map((x) => x.name)));
    return createRunner({ ...c, db: trx }, { ...r, name });
  });
}

/**
 * Renames runner `id` to `name` under the name rule: not when another runner that is not
 * revoked has it (`taken`, with that runner's id; nothing changes). A revoked or unknown
 * runner is `unknown`. Renaming to its own name is `renamed` (nothing changes). One transaction.
 */
export async function renameRunner(c: StoreCtx, id: number, name: string): Promise<RunnerRename> {
  return c.db.transaction().execute(async (trx): Promise<RunnerRename> => {
    await lockNames(c, trx);
    const other = await trx.selectFrom('runners').select('id').where('name', '=', name).where('revoked_at', 'is', null).where('id', '<>', id).orderBy('id').executeTakeFirst();
    if (other) return { renamed: false, reason: 'taken', takenBy: num(other.id) };
    const res = await trx.updateTable('runners').set({ name }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0 ? { renamed: true } : { renamed: false, reason: 'unknown' };
  });
}
