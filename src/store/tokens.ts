import type { Labels } from '../protocol/index.js';
import { toApiTokenRow, num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { ApiTokenRow } from './types.js';

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

/** Stores a runner registration token (hash only), usable once until `expiresAt` (epoch ms). */
export async function createRegistrationToken(c: StoreCtx, t: { tokenHash: string; labels: Labels; expiresAt: number; now: number }): Promise<void> {
  assertInt('expiresAt', t.expiresAt, 0);
  assertInt('now', t.now, 0);
  await c.db
    .insertInto('registration_tokens')
    .values({ token_hash: t.tokenHash, labels: c.codec.json(t.labels), expires_at: t.expiresAt, used_at: null, created_at: t.now })
    .execute();
}

/**
 * One conditional UPDATE: marks the token used only if it exists, is unused and
 * `expires_at > now`; returns its labels, else null. Two concurrent callers: one wins.
 */
export async function consumeRegistrationToken(c: StoreCtx, tokenHash: string, now: number): Promise<{ labels: Labels } | null> {
  assertInt('now', now, 0);
  const row = await c.db
    .updateTable('registration_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['labels'])
    .executeTakeFirst();
  return row ? { labels: c.codec.parse(row.labels) as Labels } : null;
}
