import type { Hono } from 'hono';
import { CreateUserRequest, type User } from '../../protocol/index.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, readBody } from '../http-util.js';
import { hashPassword } from '../passwords.js';
import type { UserRow } from '../../store/types.js';
import { iso } from '../views.js';

/** A store user row → the API's {@link User}. */
export function userView(u: UserRow): User {
  return { id: u.id, name: u.name, role: u.role, disabled: u.disabled, hasPassword: u.hasPassword, createdAt: iso(u.createdAt) };
}

/**
 * Users (admin only, issue 8):
 * - `GET /api/users` → `{ users: User[] }`;
 * - `POST /api/users` {@link CreateUserRequest} → 201 {@link User}; a taken name → 409
 *   `conflict` (field `name`). The password is stored only as a scrypt hash.
 */
export function mountUsers(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.get('/api/users', requireAdmin(), async (c) => {
    return c.json({ users: (await ctx.store.listUsers()).map(userView) });
  });

  app.post('/api/users', requireAdmin(), async (c) => {
    const body = await readBody(c, CreateUserRequest);
    if (!body.ok) return body.response;
    if (await ctx.store.findUserCredentials(body.value.name)) {
      return apiError(c, 409, 'conflict', `name: a user called ${body.value.name} exists`, 'name');
    }
    const passwordHash = await hashPassword(body.value.password);
    let row: UserRow;
    try {
      row = await ctx.store.createUser({ name: body.value.name, role: body.value.role, passwordHash, now: ctx.now() });
    } catch (err) {
      if (/taken/.test(String(err))) return apiError(c, 409, 'conflict', `name: a user called ${body.value.name} exists`, 'name');
      throw err;
    }
    ctx.log.info('user created', { user: row.name, role: row.role, by: c.var.principal.name });
    return c.json(userView(row), 201);
  });
}
