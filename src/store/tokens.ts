import { MAX_ID, type Labels } from '../protocol/index.js';
import type { Selectable } from 'kysely';
import { toApiTokenRow, num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { RegistrationTokensTable } from './schema.js';
import type { ApiTokenRow, RegistrationTokenRow } from './types.js';

/** Stores an API token (hash only). @throws on a duplicate hash or a bad role/time. */
export async function createApiToken(
  c: StoreCtx,
  t: { name: string; role: 'admin' | 'member'; tokenHash: string; now: number },
): Promise<ApiTokenRow> {
  if (t.role !== 'admin' && t.role !== 'member') throw new Error(`store: role must be admin or member, got ${JSON.stringify(t.role)}`);
  assertInt('now', t.now, 0);
  const row = await c.db
    .insertInto('api_tokens')
    .values({ name: t.name, role: t.role, token_hash: t.tokenHash, created_at: t.now })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toApiTokenRow(row);
}

/** The token with this SHA-256 hash, or null. */
export async function findApiTokenByHash(c: StoreCtx, tokenHash: string): Promise<ApiTokenRow | null> {
  const row = await c.db.selectFrom('api_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  return row ? toApiTokenRow(row) : null;
}

/** Number of API tokens stored. */
export async function countApiTokens(c: StoreCtx): Promise<number> {
  const row = await c.db.selectFrom('api_tokens').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  return num(row.n);
}

/** A stored registration token row as the store returns it (never its hash). */
type RegistrationTokenSelect = Pick<Selectable<RegistrationTokensTable>, 'id' | 'labels' | 'created_at' | 'expires_at' | 'used_at' | 'revoked_at'>;

const REG_COLUMNS = ['id', 'labels', 'created_at', 'expires_at', 'used_at', 'revoked_at'] as const;

function toRegistrationTokenRow(c: StoreCtx, r: RegistrationTokenSelect): RegistrationTokenRow {
  return {
    id: num(r.id),
    labels: c.codec.parse(r.labels) as Labels,
    createdAt: num(r.created_at),
    expiresAt: num(r.expires_at),
    usedAt: numOrNull(r.used_at),
    revokedAt: numOrNull(r.revoked_at),
  };
}

/** Stores a runner registration token (hash only), usable once until `expiresAt` (epoch ms); returns it (without the hash). */
export async function createRegistrationToken(c: StoreCtx, t: { tokenHash: string; labels: Labels; expiresAt: number; now: number }): Promise<RegistrationTokenRow> {
  assertInt('expiresAt', t.expiresAt, 0);
  assertInt('now', t.now, 0);
  const row = await c.db
    .insertInto('registration_tokens')
    .values({ token_hash: t.tokenHash, labels: c.codec.json(t.labels), expires_at: t.expiresAt, used_at: null, revoked_at: null, created_at: t.now })
    .returning([...REG_COLUMNS])
    .executeTakeFirstOrThrow();
  return toRegistrationTokenRow(c, row);
}

/**
 * One conditional UPDATE: marks the token used only if it exists, is unused, not revoked and
 * `expires_at > now`; returns its labels, else null. Two concurrent callers: one wins.
 */
export async function consumeRegistrationToken(c: StoreCtx, tokenHash: string, now: number): Promise<{ labels: Labels } | null> {
  assertInt('now', now, 0);
  const row = await c.db
    .updateTable('registration_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['labels'])
    .executeTakeFirst();
  return row ? { labels: c.codec.parse(row.labels) as Labels } : null;
}

/**
 * Registration tokens by id (oldest first), never their hash. With `liveAt` (epoch ms): only
 * those still usable then (unused, not revoked, `expiresAt > liveAt`).
 */
export async function listRegistrationTokens(c: StoreCtx, q: { liveAt?: number } = {}): Promise<RegistrationTokenRow[]> {
  let query = c.db.selectFrom('registration_tokens').select([...REG_COLUMNS]);
  if (q.liveAt !== undefined) {
    assertInt('liveAt', q.liveAt, 0);
    query = query.where('used_at', 'is', null).where('revoked_at', 'is', null).where('expires_at', '>', q.liveAt);
  }
  const rows = await query.orderBy('id').execute();
  return rows.map((r) => toRegistrationTokenRow(c, r));
}

/**
 * Revokes registration token `id` at `now`: from then on it is never consumed. Only an unused,
 * not yet revoked token changes (a second revoke keeps the first time; a used token stays as
 * it is: its runner is revoked with revokeRunner). Returns the token as it is now, or null when
 * there is none with that id.
 */
export async function revokeRegistrationToken(c: StoreCtx, id: number, now: number): Promise<RegistrationTokenRow | null> {
  assertInt('id', id, 1);
  assertInt('now', now, 0);
  if (id > MAX_ID) return null; // no such id (PostgreSQL would refuse it as out of range for integer)
  const changed = await c.db
    .updateTable('registration_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .returning([...REG_COLUMNS])
    .executeTakeFirst();
  if (changed) return toRegistrationTokenRow(c, changed);
  const row = await c.db.selectFrom('registration_tokens').select([...REG_COLUMNS]).where('id', '=', id).executeTakeFirst();
  return row ? toRegistrationTokenRow(c, row) : null;
}
