import { z } from 'zod';

/**
 * Largest id the store can hold, 2^31 − 1 = 2,147,483,647: ids are PostgreSQL `integer`
 * (`serial`, store/migrations/0001_init.ts), as are event seqs and task turns. PostgreSQL
 * refuses a larger value in a query ("value out of range for type integer", which reached
 * callers as 500 `internal`) where SQLite just finds no row; the API refuses it first, with
 * 400 `invalid_request` naming the field, the same on both engines.
 */
export const MAX_ID = 2_147_483_647;

/** What every id error says after the field name: `must be an integer from 1 to 2147483647`. */
export const ID_RANGE = `must be an integer from 1 to ${MAX_ID}`;

/**
 * An id (job, runner, task, receiver, API token) in a request body or runner message: an
 * integer 1..{@link MAX_ID}. One issue per bad value (`resumeJobId: must be an integer from 1
 * to 2147483647`): `abort` stops the later checks once one has failed.
 */
export const Id = z
  .number()
  .int({ error: ID_RANGE, abort: true })
  .min(1, { error: ID_RANGE, abort: true })
  .max(MAX_ID, { error: ID_RANGE });
