import type { z } from 'zod';
import { BudgetView, CostRollup, Job, JobEventPage, JobList, JobTree, type CostGroup, type CreateJobRequest, type JobEvent, type JobStatus } from '../protocol/index.js';
import { followJobEvents, type FollowOptions } from './follow-events.js';
import { ApiTransport } from './transport.js';
import { jobIdPath } from './util.js';

/** `POST /api/jobs` body as a caller writes it (defaults may be left out). */
export type CreateJobInput = z.input<typeof CreateJobRequest>;

/** Filters of `GET /api/jobs`. `limit` ≤ 200; `before` is a job id cursor (`JobList.nextCursor`). */
export interface ListJobsQuery {
  status?: JobStatus;
  agent?: string;
  limit?: number;
  before?: number;
  /** Only jobs that ran on this runner (id). */
  runner?: number;
  /** createdAt bounds, ISO-8601: from inclusive, to exclusive. */
  from?: string;
  to?: string;
}

/** The client SDK's job calls: jobs, their events, budgets, trees and costs (part of {@link FlotillaClient}, client.ts). */
export abstract class JobsApi extends ApiTransport {
  /** `POST /api/jobs` → the created job (status `queued`). Budget in USD. */
  async createJob(req: CreateJobInput): Promise<Job> {
    return this.request('POST', '/api/jobs', Job, req);
  }

  /** `GET /api/jobs/:id` → the job, including `usage` (tokens, model calls, cost in µ$). */
  async getJob(id: number): Promise<Job> {
    return this.request('GET', `/api/jobs/${jobIdPath(id)}`, Job);
  }

  /** `GET /api/jobs` → a page of jobs, newest first, and the cursor to the next page. */
  async listJobs(q: ListJobsQuery = {}): Promise<JobList> {
    const params = new URLSearchParams();
    if (q.status) params.set('status', q.status);
    if (q.agent) params.set('agent', q.agent);
    if (q.limit !== undefined) params.set('limit', String(q.limit));
    if (q.before !== undefined) params.set('before', String(q.before));
    if (q.runner !== undefined) params.set('runner', String(q.runner));
    if (q.from) params.set('from', q.from);
    if (q.to) params.set('to', q.to);
    const qs = params.toString();
    return this.request('GET', `/api/jobs${qs ? `?${qs}` : ''}`, JobList);
  }

  /** `GET /api/jobs/:id/budget` → the budget of the job's tree (limit, spent, reserved, remaining; µ$). */
  async getBudget(id: number): Promise<BudgetView> {
    return this.request('GET', `/api/jobs/${jobIdPath(id)}/budget`, BudgetView);
  }

  /**
   * `GET /api/jobs/:id/events/page` → up to `limit` (1–2,000; server default 300) of the job's
   * events before seq `before` (default: the newest), ascending, and how many older remain.
   */
  async getJobEventPage(id: number, q: { before?: number; limit?: number } = {}): Promise<JobEventPage> {
    const p = new URLSearchParams();
    if (q.before !== undefined) p.set('before', String(q.before));
    if (q.limit !== undefined) p.set('limit', String(q.limit));
    const qs = p.toString();
    return this.request('GET', `/api/jobs/${jobIdPath(id)}/events/page${qs ? `?${qs}` : ''}`, JobEventPage);
  }

  /** `POST /api/jobs/:id/budget` (admin) → adds `addUsd` dollars to the job's tree and resumes its budget-paused jobs (ids in `resumed`). */
  async topUpBudget(id: number, addUsd: number): Promise<BudgetView> {
    return this.request('POST', `/api/jobs/${jobIdPath(id)}/budget`, BudgetView, { addUsd });
  }

  /** `GET /api/costs?by=&since=&root=` → the gateway ledger's calls, tokens and cost per group. */
  async costs(q: { by: CostGroup; since?: string; root?: number }): Promise<CostRollup> {
    const params = new URLSearchParams({ by: q.by });
    if (q.since) params.set('since', q.since);
    if (q.root !== undefined) params.set('root', String(q.root));
    return this.request('GET', `/api/costs?${params.toString()}`, CostRollup);
  }

  /**
   * `GET /api/jobs/:id/tree` → the job and all its descendants (issue 6): each node's status,
   * agent, runner, tokens and cost (µ$), result and children; `total` sums the subtree.
   * Errors: 404 `not_found`.
   */
  async getJobTree(id: number): Promise<JobTree> {
    return this.request('GET', `/api/jobs/${jobIdPath(id)}/tree`, JobTree);
  }

  /** `POST /api/jobs/:id/cancel` → the job after cancelling (409 `not_cancellable` when it already ended). */
  async cancelJob(id: number): Promise<Job> {
    return this.request('POST', `/api/jobs/${jobIdPath(id)}/cancel`, Job, {});
  }

  /** `POST /api/jobs/:id/start` (admin) → the job, assigned now (409 `over_capacity`/`on_hold` without force). */
  async startJob(id: number, req: { runnerId?: number; force?: boolean } = {}): Promise<Job> {
    return this.request('POST', `/api/jobs/${jobIdPath(id)}/start`, Job, req);
  }

  /**
   * Follows a job's events over SSE (`GET /api/jobs/:id/events`), in seq order, each once,
   * reconnecting with `Last-Event-ID` ({@link followJobEvents}).
   */
  followEvents(jobId: number, opts: FollowOptions = {}): AsyncGenerator<JobEvent> {
    return followJobEvents({ url: this.url, fetchFn: this.fetchFn, headers: () => this.authHeaders(), reconnectDelayMs: this.reconnectDelayMs, maxReconnects: this.maxReconnects }, jobId, opts);
  }
}
