// DATABASE_URL as logs and errors show it (store/postgres.ts safeUrl): no password, in the user
// part or as a query parameter node-postgres reads (?password=, ?sslpassword=: fresh-tester finding).
import { describe, expect, it } from 'vitest';
import { safeUrl } from './postgres.js';

describe('safeUrl', () => {
  it('masks the user part password and password query parameters, keeps the rest', () => {
    expect(safeUrl('postgres://u:pw@h/db')).toBe('postgres://u:***@h/db');
    expect(safeUrl('postgres://postgres@127.0.0.1:5432/db?password=Secret99&sslpassword=x&user=postgres')).toBe('postgres://postgres@127.0.0.1:5432/db?password=***&sslpassword=***&user=postgres');
    expect(safeUrl('postgres://h/db?sslmode=require')).toBe('postgres://h/db?sslmode=require');
    expect(safeUrl('not a url')).toBe('(unparseable database URL)');
  });
});
