import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * Marks a PostgreSQL statement of a hot path as one to prepare: SQL text that starts with it
 * runs as a named prepared statement, parsed and planned once per pooled connection instead of
 * on every call. Measured in bench/dispatch (PostgreSQL backends' CPU per dispatched job):
 * planning was half of it for the claim and completion statements. Only for statements whose
 * text is one of a few fixed variants (parameters as arrays, never an IN list of varying
 * length), and whose result columns are listed (not `*`): a prepared `*` would fail with
 * "cached plan must not change result type" once another replica's migration adds a column.
 */
export const PREPARE = '/* prepared */';

/** Names already worked out, by text: the texts are a few fixed ones, and hashing one cost a few µs on every call (issue 7 webhook batches). Bounded. */
const names = new Map<string, string>();

/** The statement name for `text`: a hash, so one text always gets one name (pg refuses one name for two texts). */
function nameOf(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= 1000) names.clear();
    names.set(text, (name = `flotilla_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`));
  }
  return name;
}

/**
 * The `pg` client class for the store's pool: as `pg.Client`, except that a query given as SQL
 * text starting with {@link PREPARE} is sent as a named prepared statement (the driver keeps
 * the parsed statements per connection and sends only Bind/Execute after the first call).
 */
export class PreparingClient extends pg.Client {}

// Set on the prototype (not an override) so the class keeps pg.Client's typed query overloads.
const plainQuery = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;
(PreparingClient.prototype as unknown as { query: (this: pg.Client, ...args: unknown[]) => unknown }).query = function (this: pg.Client, ...args: unknown[]) {
  const [text, values, cb] = args;
  if (typeof text === 'string' && text.startsWith(PREPARE)) return plainQuery.call(this, { name: nameOf(text), text, values }, cb);
  return plainQuery.apply(this, args);
};
