import { ApiError, type CreateJobInput, type FlotillaClient } from '../client/index.js';
import { followJob } from './follow.js';
import { cancelAndWait } from './cancel.js';
import { onInterrupt, type CliIO } from './io.js';
import { refusedCallMicros } from '../core/budget-message.js';
import { formatMicros } from '../core/money.js';

/** Exit code after Ctrl-C (128 + SIGINT), as shells report it. */
export const EXIT_INTERRUPTED = 130;
/** Exit code after SIGTERM (128 + 15). */
export const EXIT_TERMINATED = 143;

/** Options of {@link runJob}. */
export interface RunJobOptions {
  json: boolean;
  /** Submit and return at once (prints the job id), without following. */
  detach?: boolean;
  io: CliIO;
  /** Called after the job was created, before following (e.g. run --local says which model). */
  onCreated?: (jobId: number) => void;
  /**
   * `run --local`: a job that pauses on its budget is cancelled and the run fails (exit 1)
   * with how to run it again, since the local server ends with the command and nobody could
   * top it up.
   */
  failWhenPaused?: boolean;
}

/**
 * Submits a job through the client and (unless detached) follows it to its end, printing its
 * lines and cost table (follow.ts). Ctrl-C (SIGINT/SIGTERM on `io.signals`) while attached
 * cancels the job (a paused one too: it will not resume), says so on stderr with the hint
 * `run with --detach to leave jobs running` (not for --local), and returns 130 (SIGINT) or 143 (SIGTERM).
 * With `failWhenPaused` a paused job is cancelled and 1 returned; with `json`, stdout ends with
 * `{"job": <the paused job>}` and stderr gets `{"error": {message, code: "budget_paused", jobId, jobStatus}}`.
 * @returns the exit code: 0 only when the job succeeded (or was submitted, when detached).
 * @throws ApiError when the server refuses the job or cannot be reached.
 */
export async function runJob(client: FlotillaClient, req: CreateJobInput, opts: RunJobOptions): Promise<number> {
  const { io, json } = opts;
  // Listening before the job is submitted: a Ctrl-C while it is (an HTTP round trip) cancels it
  // once it exists (followJob returns at once, interrupted), never leaves it queued behind.
  const ac = new AbortController();
  let signalName = '';
  const off = onInterrupt(io, (sig) => {
    signalName = sig;
    ac.abort();
  });
  let job;
  try {
    job = await client.createJob(req);
  } catch (err) {
    off();
    throw err;
  }
  opts.onCreated?.(job.id);
  if (opts.detach) {
    off();
    if (json) io.stdout.write(JSON.stringify({ job }) + '\n');
    else io.stdout.write(`job ${job.id} ${job.status} (${job.agent}); follow it with: flotilla jobs show ${job.id}\n`);
    return 0;
  }
  let result;
  try {
    result = await followJob(client, job, { json, io, signal: ac.signal, cancelsOnInterrupt: true, ...(opts.failWhenPaused ? { stopWhenPaused: true } : {}) });
  } finally {
    off();
  }
  if (result.interrupted) {
    // Like `docker run` without -d: the attached job ends with the command — even a paused one a top-up would have resumed.
    const what = result.job.status === 'paused' ? `job ${job.id}, paused for budget: it will not resume` : `job ${job.id}`;
    // Not for --local (failWhenPaused): it takes no --detach, its server ends with the command.
    const hint = opts.failWhenPaused ? '' : ' (run with --detach to leave jobs running)';
    io.stderr.write(`\nflotilla: ${signalName === 'SIGTERM' ? 'terminated' : 'interrupted'}: cancelling ${what}${hint}\n`);
    try {
      const after = await cancelAndWait(client, job.id);
      io.stderr.write(`flotilla: job ${job.id} ${after.status}\n`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'not_cancellable') io.stderr.write(`flotilla: job ${job.id} had already ended: ${err.message}\n`);
      else throw err;
    }
    return signalName === 'SIGTERM' ? EXIT_TERMINATED : EXIT_INTERRUPTED;
  }
  if (result.paused) {
    const budget = req.budgetUsd !== undefined ? ` (--budget ${req.budgetUsd})` : '';
    // the job itself, or a child of it (follow.ts: the tree's other paused jobs)
    const paused = result.pausedJobId ?? job.id;
    const larger = await largerBudget(client, paused);
    const who = paused === job.id ? `job ${job.id} paused: its budget${budget} does not cover the next model call` : `job ${paused}, a child of job ${job.id}, paused: the tree's budget${budget} does not cover its next model call`;
    const why = `${who}; a --local run cannot be topped up (its server ends with the command): run it again with ${larger}, or against \`flotilla up\` and top it up with \`flotilla budget ${paused} --add USD\``;
    if (!json) io.stderr.write(`\nflotilla: ${why}\n`);
    const after = await cancelAndWait(client, job.id);
    // --json: stdout already ended with `{"job": <the paused job>}` (follow.ts); the failure as main.ts prints one.
    if (json) io.stderr.write(JSON.stringify({ error: { message: `${why}; job ${job.id} ${after.status}`, code: 'budget_paused', jobId: job.id, jobStatus: after.status, ...(paused !== job.id ? { pausedJobId: paused } : {}) } }) + '\n');
    else io.stderr.write(`flotilla: job ${job.id} ${after.status}\n`);
    return 1;
  }
  return result.job.status === 'succeeded' ? 0 : 1;
}

/**
 * The `--budget` advice for a `--local` run paused on its budget: `--budget X or more`, X what
 * the tree spent plus the refused call's worst case as its refusal states it (the job's error,
 * core/budget-message.ts refusedCallMicros), rounded up to whole cents: the budget that would
 * have let that call through with the same spending before it (it said only "a larger
 * --budget": tester finding). Not the resume rule's need (GET /api/jobs/:id/budget
 * `resumeNeeds`), which grows the call for a resumed harness's larger request: a run started
 * again sends the call as it was (a tester's $0.030294 was advised as $0.05, not $0.04). That
 * need is used only when the refusal names no figure; without either (an older server, a read
 * that failed): "a larger --budget".
 */
async function largerBudget(client: FlotillaClient, jobId: number): Promise<string> {
  try {
    const [view, job] = await Promise.all([client.getBudget(jobId), client.getJob(jobId)]);
    if (view.budget.jobId !== undefined) return 'a larger --budget';
    const call = refusedCallMicros(job.error);
    const tree = view.resumeNeeds?.short.find((x) => x.jobId === undefined);
    const needed = call !== null ? Math.max(view.budget.spentMicros + call, view.budget.limitMicros + 1) : tree ? view.budget.limitMicros + tree.shortMicros : null;
    if (needed === null) return 'a larger --budget';
    const cents = Math.ceil(needed / 10_000);
    // following the advice alone, a newcomer ran the job again and again, a few cents more each
    // time (fresh tester): each later call needs its worst case on top of all spent before it
    const later = call !== null ? `; every call needs room for its worst case (this one up to ${formatMicros(call)}) on top of all the job spends before it, so a budget of the job's whole cost plus that lets it finish` : '';
    return `--budget ${(cents / 100).toFixed(2)} or more (what would have let the refused call through${later})`;
  } catch {
    return 'a larger --budget';
  }
}
