import type { Kysely, Migration } from 'kysely';
import type { SqlDialect } from '../schema.js';

/**
 * 0025 (issue 3): on SQLite, `budget_reservations_expires` (0008) is dropped. Every model call
 * inserts a reservation and deletes it at settle, and each keep-alive tick moves its expiry:
 * with the index each of those writes changes a second b-tree, so each of the call's two
 * commits appended one more 4 KiB page to the WAL: 11 frames a call instead of 9 (each frame
 * two pwrites, its 24-byte header and its page: 22.6 → 18.6 per call under `strace -c -f`,
 * reserve + settle one at a time). The 9 left: the tree's budget row, the reservation and
 * sqlite_sequence at the reserve; the ledger row, its two indexes, sqlite_sequence, the
 * reservation and the tree's row at the settle; the checkpoint thread copies each page into
 * the database file and fsyncs it again. The only reader by expiry is the sweeper
 * (expired-reservations.ts), once per sweep interval, over a table that holds the calls in
 * flight and the rare markers of swept reservations (kept a day): a scan of a few hundred rows
 * at most, a SQLite data folder having one gateway process (open.ts lock). PostgreSQL keeps
 * the index (several replicas sweep one table).
 */
export function sqliteReservationIndex(dialect: SqlDialect): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped by design (Kysely docs)
    async up(db: Kysely<any>) {
      if (dialect === 'sqlite') await db.schema.dropIndex('budget_reservations_expires').ifExists().execute();
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async down(db: Kysely<any>) {
      if (dialect === 'sqlite') await db.schema.createIndex('budget_reservations_expires').ifNotExists().on('budget_reservations').column('expires_at').execute();
    },
  };
}
