import { flag, num, toApiTokenRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { ApiTokenRow, UserRow } from './types.js';

/** Roles a user or API token can have: members read, admins change (issue 8). */
const ROLES = new Set(['admin', 'member']);

function toUserRow(r: { id: unknown; name: string; role: string; disabled: unknown; created_at: unknown; password_hash: string | null; oidc_subject: string | null }): UserRow {
  return {
    id: num(r.id),
    name: r.name,
    role: r.role as UserRow['role'],
    disabled: flag(r.disabled),
    hasPassword: r.password_hash !== null,
    oidc: r.oidc_subject !== null,
    createdAt: num(r.created_at),
  };
}

/**
 * Stores a user. `passwordHash` is the `scrypt$...` string of server/passwords.ts (null for a
 * user who signs in only through an identity provider).
 * @throws Error naming the field on a bad role, name or time; Error `store: user name ... is taken` on a duplicate name.
 */
export async function createUser(c: StoreCtx, u: { name: string; role: 'admin' | 'member'; passwordHash: string | null; now: number }): Promise<UserRow> {
  if (!ROLES.has(u.role)) throw new Error(`store: role must be admin or member, got ${JSON.stringify(u.role)}`);
  if (typeof u.name !== 'string' || u.name.length === 0) throw new Error('store: name must be a non-empty string');
  assertInt('now', u.now, 0);
  const taken = await c.db.selectFrom('users').select('id').where('name', '=', u.name).executeTakeFirst();
  if (taken) throw new Error(`store: user name ${JSON.stringify(u.name)} is taken`);
  const row = await c.db
    .insertInto('users')
    .values({ name: u.name, role: u.role, password_hash: u.passwordHash, oidc_issuer: null, oidc_subject: null, disabled: 0, created_at: u.now })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toUserRow(row);
}

/** The user with this name and its password hash (null when it has none), or null. */
export async function findUserCredentials(c: StoreCtx, name: string): Promise<{ user: UserRow; passwordHash: string | null } | null> {
  const row = await c.db.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
  return row ? { user: toUserRow(row), passwordHash: row.password_hash } : null;
}

/** Every user, by id. */
export async function listUsers(c: StoreCtx): Promise<UserRow[]> {
  const rows = await c.db.selectFrom('users').selectAll().orderBy('id').execute();
  return rows.map(toUserRow);
}

/** Number of users. */
export async function countUsers(c: StoreCtx): Promise<number> {
  const row = await c.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  return num(row.n);
}

/** Stores a session (hash of the cookie value only), valid until `expiresAt` (epoch ms). */
export async function createSession(c: StoreCtx, s: { tokenHash: string; userId: number; expiresAt: number; now: number }): Promise<void> {
  assertInt('userId', s.userId, 1);
  assertInt('expiresAt', s.expiresAt, 0);
  assertInt('now', s.now, 0);
  await c.db
    .insertInto('sessions')
    .values({ token_hash: s.tokenHash, user_id: s.userId, created_at: s.now, expires_at: s.expiresAt, last_seen_at: s.now })
    .execute();
}

/**
 * The live session with this hash: it exists, `expiresAt > now`, and its user is not
 * disabled. Returns its user and expiry, else null.
 */
export async function findSession(c: StoreCtx, tokenHash: string, now: number): Promise<{ user: UserRow; expiresAt: number } | null> {
  assertInt('now', now, 0);
  const row = await c.db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select([
      'users.id as id',
      'users.name as name',
      'users.role as role',
      'users.disabled as disabled',
      'users.created_at as created_at',
      'users.password_hash as password_hash',
      'users.oidc_subject as oidc_subject',
      'sessions.expires_at as expires_at',
    ])
    .where('sessions.token_hash', '=', tokenHash)
    .where('sessions.expires_at', '>', now)
    .where('users.disabled', '=', 0)
    .executeTakeFirst();
  return row ? { user: toUserRow(row), expiresAt: num(row.expires_at) } : null;
}

/** Deletes the session with this hash (sign-out). True when one was deleted. */
export async function deleteSession(c: StoreCtx, tokenHash: string): Promise<boolean> {
  const r = await c.db.deleteFrom('sessions').where('token_hash', '=', tokenHash).executeTakeFirst();
  return num(r.numDeletedRows) > 0;
}

/** Deletes every session that expired at or before `now`; returns how many. */
export async function deleteExpiredSessions(c: StoreCtx, now: number): Promise<number> {
  assertInt('now', now, 0);
  const r = await c.db.deleteFrom('sessions').where('expires_at', '<=', now).executeTakeFirst();
  return num(r.numDeletedRows);
}

/** Every API token (never its hash), by id. */
export async function listApiTokens(c: StoreCtx): Promise<ApiTokenRow[]> {
  const rows = await c.db.selectFrom('api_tokens').selectAll().orderBy('id').execute();
  return rows.map(toApiTokenRow);
}

/** Deletes (revokes) an API token; true when it existed. */
export async function deleteApiToken(c: StoreCtx, id: number): Promise<boolean> {
  assertInt('id', id, 1);
  const r = await c.db.deleteFrom('api_tokens').where('id', '=', id).executeTakeFirst();
  return num(r.numDeletedRows) > 0;
}

