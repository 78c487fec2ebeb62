import { isTerminal } from '../core/job-state.js';
import type { JobRow, Store } from '../store/types.js';

/** The Store reads {@link endedBudgetRefusal} uses. */
export type EndedBudgetStore = Pick<Store, 'getJob'>;

/**
 * Why a top-up addressed to `job` (`POST /api/jobs/:id/budget`, `flotilla budget JOB --add`)
 * would raise a budget nothing can spend any more, or null when something still can. The budget
 * raised is the one `job` uses (server/budget-path.ts budgetJobUses): `usesJobId` the child job
 * whose sub-limit that is, undefined for the tree's.
 *
 * The rule, one for the tree and for sub-limits: a budget takes a top-up while its owner (the
 * root job for the tree's budget, the sub-limited child for a sub-limit) and every ancestor of
 * that owner have not ended. A sub-limit applies only to its child and that child's descendants,
 * and a job whose parent has ended is cancelled as an orphan (server/sweeper.ts onOrphans), so
 * once the owner or an ancestor of it has ended (succeeded, failed, cancelled, lost) nothing
 * that reserves against that budget runs any more, whatever the job the top-up names. Hence:
 * - a top-up of an ended root's tree, also asked through a child using the tree: refused (the
 *   message names the root, as before this rule covered sub-limits);
 * - a top-up of the sub-limit of an ended child: refused, even while its siblings or
 *   ancestors still run — they never spend that sub-limit, and moving the money to a budget
 *   they do use would top up something the user did not name; the message names the budget
 *   above it that still takes a top-up (the nearest live sub-limited ancestor's, else the
 *   tree's) and the command for it;
 * - a top-up through an ended job that uses the sub-limit of a live ancestor (or the tree's
 *   budget of a live root): taken, that ancestor (and its other descendants) still spends it.
 * The jobs are read now (`store.getJob`, up the chain of parents); nothing is written. The
 * message is the 409 `job_ended` text: "job N ... has ended (status): ...".
 */
export async function endedBudgetRefusal(store: EndedBudgetStore, job: JobRow, usesJobId: number | undefined): Promise<string | null> {
  const ownerId = usesJobId ?? job.rootId;
  // The owner and its ancestors, root first.
  const chain: JobRow[] = [];
  let cur: JobRow | null = ownerId === job.id ? job : await store.getJob(ownerId);
  for (let depth = 0; cur && depth < 1000; depth++) {
    chain.unshift(cur);
    cur = cur.parentId === null ? null : await store.getJob(cur.parentId);
  }
  const at = chain.findIndex((j) => isTerminal(j.status));
  if (at < 0) return null;
  const ended = chain[at]!;
  if (ended.parentId === null) {
    const which = ended.id === job.id ? '' : ` (the root of job ${job.id}'s tree)`;
    return `job ${ended.id}${which} has ended (${ended.status}): its tree spends nothing more, so it takes no top-up`;
  }
  const usedBy = ownerId === job.id ? '' : `whose sub-limit job ${job.id} uses`;
  const above = chain.slice(0, at).reverse().find((j) => j.parentId !== null && j.budgetMicros > 0);
  const hint = above
    ? `; the budget above it still takes one: job ${above.id}'s sub-limit (flotilla budget ${above.id} --add <USD>)`
    : `; the budget above it still takes one: job tree ${job.rootId}'s (flotilla budget ${job.rootId} --add <USD>)`;
  if (ended.id === ownerId) {
    return `job ${ended.id}${usedBy ? ` (${usedBy})` : ''} has ended (${ended.status}): its sub-limit applies only to it and its descendants, which spend nothing more, so it takes no top-up${hint}`;
  }
  return `job ${ended.id} (an ancestor of job ${ownerId}${usedBy ? `, ${usedBy}` : ''}) has ended (${ended.status}): job ${ownerId}'s sub-limit applies only to job ${ownerId} and its descendants, which end with job ${ended.id} (a job whose parent has ended is cancelled), so it takes no top-up${hint}`;
}
