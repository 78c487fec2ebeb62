import { assertInt, type StoreCtx } from './ctx.js';

/** Account settings set through the API (issue 8, migration 0016 `settings`): key → JSON value. */

function checkKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > 100) throw new Error(`store: setting key must be a string of 1 to 100 characters, got ${JSON.stringify(key)}`);
}

/** The parsed value of `key`, or null when not set. */
export async function getSetting(c: StoreCtx, key: string): Promise<unknown> {
  checkKey(key);
  const row = await c.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
  if (!row) return null;
  return JSON.parse(row.value) as unknown;
}

/** Sets `key` to `value` (JSON-serialisable), or deletes it when `value` is null. */
export async function setSetting(c: StoreCtx, key: string, value: unknown, now: number): Promise<void> {
  checkKey(key);
  assertInt('now', now, 0);
  if (value === null || value === undefined) {
    await c.db.deleteFrom('settings').where('key', '=', key).execute();
    return;
  }
  const text = JSON.stringify(value);
  await c.db
    .insertInto('settings')
    .values({ key, value: text, updated_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: text, updated_at: now }))
    .execute();
}
