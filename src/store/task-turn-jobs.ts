import type { Transaction } from 'kysely';
import type { Database } from './schema.js';

/** The turn → job record of migration 0016 (`task_turns`), written by tasks-turns.ts attachTurnJob, read by task-conversation.ts. */

/** Notes that job `jobId` runs turn `turn` of task `taskId` (a turn taken again gets its new job). Call inside the attaching transaction. */
export async function noteTurnJob(trx: Transaction<Database>, taskId: number, turn: number, jobId: number, now: number): Promise<void> {
  await trx
    .insertInto('task_turns')
    .values({ task_id: taskId, turn, job_id: jobId, created_at: now })
    .onConflict((oc) => oc.columns(['task_id', 'turn']).doUpdateSet({ job_id: jobId, created_at: now }))
    .execute();
}
