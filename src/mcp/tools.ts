import type { Job, Labels } from '../protocol/index.js';
import { TERMINAL_STATUSES } from '../protocol/index.js';
import type { FlotillaClient } from '../client/index.js';
import { formatMicros } from '../core/money.js';

/**
 * What the Flotilla MCP tools do (issue 6), over the client SDK authenticated with the calling
 * job's token. Pure request logic, no MCP: server.ts wraps each in an MCP tool. Money is given
 * both as integer micro-dollars (`cost_micros`) and as a USD string (`cost`); times in ms.
 */

/** A job as the tools report it: status and the structured result the parent collects. */
export interface ToolJobView {
  id: number;
  agent: string;
  status: Job['status'];
  /** True once the job has ended (succeeded, failed, cancelled, lost). */
  done: boolean;
  end_reason: string | null;
  error: string | null;
  /** The job's input's `repo`/`name` and labels, so a parent can tell its children apart. */
  input: Record<string, unknown>;
  labels: Labels;
  runner_id: number | null;
  summary: string | null;
  changed_files: string[];
  branch: string | null;
  commit: string | null;
  needs_human: boolean;
  /** Cost of the job's own model calls, integer micro-dollars. */
  cost_micros: number;
  /** The same as a USD string, e.g. `$0.054399`. */
  cost: string;
  model_calls: number;
}

/** A job (with `usage`) → {@link ToolJobView}. */
export function toolView(j: Job): ToolJobView {
  const costMicros = j.usage?.costMicros ?? 0;
  return {
    id: j.id,
    agent: j.agent,
    status: j.status,
    done: TERMINAL_STATUSES.includes(j.status),
    end_reason: j.endReason,
    error: j.error,
    input: j.input,
    labels: j.selector,
    runner_id: j.runnerId,
    summary: j.result?.summary ?? null,
    changed_files: j.result?.changedFiles ?? [],
    branch: j.result?.branch ?? null,
    commit: j.result?.commit ?? null,
    needs_human: j.result?.needsHuman ?? false,
    cost_micros: costMicros,
    cost: formatMicros(costMicros),
    model_calls: j.usage?.modelCalls ?? 0,
  };
}

/** Arguments of `start_job`. `budget_usd` is the child's sub-limit in USD (at most what the tree has left). */
export interface StartJobArgs {
  agent: string;
  input?: Record<string, unknown>;
  labels?: Labels;
  budget_usd?: number;
}

/**
 * `start_job`: creates a child of the calling job (`POST /api/jobs` with the job token).
 * @returns the child as {@link ToolJobView} (status `queued`).
 * @throws ApiError with the server's message: unknown agent, invalid input, `tree_limit`
 *   (depth or job count of the tree), `budget_exceeded` (sub-limit above what is left).
 */
export async function startJob(client: FlotillaClient, args: StartJobArgs): Promise<ToolJobView> {
  const job = await client.createJob({
    agent: args.agent,
    input: args.input ?? {},
    ...(args.labels ? { labels: args.labels } : {}),
    ...(args.budget_usd !== undefined ? { budgetUsd: args.budget_usd } : {}),
  });
  return toolView(job);
}

/** `job_status`: one job of the caller's tree, with its result and cost. @throws ApiError (403 outside the tree, 404). */
export async function jobStatus(client: FlotillaClient, id: number): Promise<ToolJobView> {
  return toolView(await client.getJob(id));
}

/** `cancel_job`: cancels a descendant of the calling job (and its own subtree). @throws ApiError (403 not a descendant, 409 ended). */
export async function cancelJob(client: FlotillaClient, id: number): Promise<ToolJobView> {
  return toolView(await client.cancelJob(id));
}

/** Options of {@link waitJobs}. */
export interface WaitOptions {
  /** Job ids; absent or empty = every direct child of `selfId`. */
  ids?: number[];
  /** The calling job's id (FLOTILLA_JOB_ID), needed when `ids` is absent. */
  selfId?: number;
  /** Give up after this many seconds (default 600, at most 3600) and report where each job is. */
  timeoutSeconds?: number;
  /** Poll interval, ms (default 500). */
  pollMs?: number;
  /** Cancels the wait (the MCP request was cancelled). */
  signal?: AbortSignal;
}

/** Result of `wait_jobs`: every job, whether all ended, and their summed cost. */
export interface WaitResult {
  all_done: boolean;
  timed_out: boolean;
  jobs: ToolJobView[];
  succeeded: number;
  failed: number;
  needs_human: number;
  total_cost_micros: number;
  total_cost: string;
}

/**
 * `wait_jobs`: waits until every job in `ids` (default: the caller's children) has ended, or
 * the timeout passes; paused jobs (tree out of budget) keep being waited for, since a top-up
 * resumes them. Polls `GET /api/jobs/:id` every `pollMs`.
 * @throws Error when neither ids nor selfId is given; ApiError from the server (403, 404).
 */
export async function waitJobs(client: FlotillaClient, o: WaitOptions): Promise<WaitResult> {
  let ids = o.ids ?? [];
  if (ids.length === 0) {
    if (o.selfId === undefined) throw new Error('wait_jobs: give ids (no FLOTILLA_JOB_ID to find this job\'s children)');
    ids = (await client.getJobTree(o.selfId)).tree.children.map((c) => c.id);
  }
  const timeoutMs = Math.min(3600, Math.max(0, o.timeoutSeconds ?? 600)) * 1000;
  const deadline = Date.now() + timeoutMs;
  const pollMs = o.pollMs ?? 500;
  for (;;) {
    const jobs = await Promise.all(ids.map((id) => client.getJob(id)));
    const views = jobs.map(toolView);
    const allDone = views.every((v) => v.done);
    const timedOut = !allDone && (Date.now() >= deadline || o.signal?.aborted === true);
    if (allDone || timedOut) {
      const total = views.reduce((s, v) => s + v.cost_micros, 0);
      return {
        all_done: allDone,
        timed_out: timedOut,
        jobs: views,
        succeeded: views.filter((v) => v.status === 'succeeded').length,
        failed: views.filter((v) => v.done && v.status !== 'succeeded').length,
        needs_human: views.filter((v) => v.needs_human).length,
        total_cost_micros: total,
        total_cost: formatMicros(total),
      };
    }
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, deadline - Date.now()))));
  }
}
