import { z } from 'zod';
import { oneLineText } from './text.js';

/** Roles of users and API tokens: members read, admins change (issue 8). */
export const Role = z.enum(['admin', 'member']);
export type Role = z.infer<typeof Role>;

/** Who is calling: an API token or a signed-in user. */
export const Principal = z.object({
  kind: z.enum(['token', 'user']),
  id: z.number().int().positive(),
  name: z.string(),
  role: Role,
});
export type Principal = z.infer<typeof Principal>;

/** `POST /api/session` body: sign in with a user name and password. */
export const SignInRequest = z
  .object({
    name: z.string().min(1).max(100),
    password: z.string().min(1).max(1000),
  })
  .strict();
export type SignInRequest = z.infer<typeof SignInRequest>;

/** `GET|POST /api/session` response: the caller, and (cookie sessions) when the session ends, ISO-8601. */
export const SessionInfo = z.object({ principal: Principal, expiresAt: z.string().nullable() });
export type SessionInfo = z.infer<typeof SessionInfo>;

/** A user as the API returns it (never a password hash). Times ISO-8601. */
export const User = z.object({
  id: z.number().int().positive(),
  name: z.string(),
  role: Role,
  disabled: z.boolean(),
  hasPassword: z.boolean(),
  createdAt: z.string(),
});
export type User = z.infer<typeof User>;

/** Password rule: 10 to 1000 characters (NIST SP 800-63B: length over composition rules). */
export const Password = z.string().min(10, 'must be at least 10 characters').max(1000);

/** `POST /api/users` body (admin). */
export const CreateUserRequest = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/, 'letters, digits, . _ @ - (1-100 characters)'),
    role: Role,
    password: Password,
  })
  .strict();
export type CreateUserRequest = z.infer<typeof CreateUserRequest>;

/** An API token as listed (never the token or its hash). */
export const ApiTokenInfo = z.object({ id: z.number().int().positive(), name: z.string(), role: Role, createdAt: z.string() });
export type ApiTokenInfo = z.infer<typeof ApiTokenInfo>;

/** `POST /api/tokens` body (admin). `name`: 1-100 characters of one line (trimmed; no control character, U+2028 or U+2029: it is shown in listings). */
export const CreateApiTokenRequest = z.object({ name: oneLineText(100), role: Role }).strict();
export type CreateApiTokenRequest = z.infer<typeof CreateApiTokenRequest>;

/** `POST /api/tokens` response: the token itself, shown once. */
export const CreatedApiToken = ApiTokenInfo.extend({ token: z.string() });
export type CreatedApiToken = z.infer<typeof CreatedApiToken>;
