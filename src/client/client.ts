import { z } from 'zod';
import {
  AgentDefinition,
  AgentVersionList,
  InstallAgentsResponse,
  type AgentVersionInfo,
  type InstallAgentsRequest,
  BudgetView,
  CostRollup,
  type CostGroup,
  Job,
  JobEvent,
  JobList,
  JobTree,
  ModelPriceOverride,
  ModelRoute,
  ModelRoutesView,
  EffortTierList,
  EffortTierView,
  type EffortLevel,
  type ModelPrice,
  type ProviderName,
  Runner,
  RunnerList,
  RunnerDetail,
  RunnerTokenInfo,
  RunnerTokenList,
  CreateJobRequest,
  describeIssues,
  SessionInfo,
  User,
  ApiTokenInfo,
  CreatedApiToken,
  type SignInRequest,
  type CreateUserRequest,
  type CreateApiTokenRequest,
  type JobStatus,
  type Labels,
  type HoldDuration,
  type RunnerStatus,
  Task,
  TaskList,
  TaskDetail,
  CreateTaskRequest,
  Receiver,
  ReceiverList,
  CreatedReceiver,
  type CreateReceiverRequest,
  type TaskStatus,
  TaskConversation,
  RunnerActivity,
  JobEventPage,
} from '../protocol/index.js';
import { ApiError, apiErrorFromResponse } from './errors.js';
import { followJobEvents, type FollowOptions } from './follow-events.js';
import { causeOf, idPath, jobIdPath } from './util.js';

export type { FollowOptions };

/** Options of {@link FlotillaClient}. */
export interface FlotillaClientOptions {
  /** Base URL of the control plane, e.g. `http://127.0.0.1:8787` (a trailing slash is fine). */
  url: string;
  /**
   * API token (`fla_...`), sent as `Authorization: Bearer`. Leave it out in a browser signed in
   * with a session cookie (the dashboard): the cookie goes along with same-origin requests.
   */
  token?: string;
  /** fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** First delay before reconnecting a dropped event stream, ms (doubles per failure up to 5 s). Default 250. */
  reconnectDelayMs?: number;
  /** Consecutive failed reconnects (without a new event in between) before followEvents gives up. Default 10. */
  maxReconnects?: number;
}

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

/**
 * `POST /api/runner-tokens` response: a single-use registration token and its expiry (ISO-8601
 * or epoch ms); `id` (servers since migration 0019) names it for `listRunnerTokens`/`revokeRunnerToken`.
 */
export const RunnerTokenResponse = z.object({ id: z.number().int().positive().optional(), token: z.string().min(1), expiresAt: z.union([z.string(), z.number()]) });
export type RunnerTokenResponse = z.infer<typeof RunnerTokenResponse>;

const RunnerListBody = z.object({ runners: z.array(Runner) });
const AgentListBody = z.object({ agents: z.array(AgentDefinition) });
const UserListBody = z.object({ users: z.array(User) });
const TokenListBody = z.object({ tokens: z.array(ApiTokenInfo) });

/**
 * Typed SDK over the Flotilla REST/SSE API. Every response is validated with the protocol
 * schemas. Every method throws {@link ApiError} on an error reply (with the server's code,
 * message and field), on an unreachable server (`code: 'network'`, status 0) and on a reply
 * that does not match the protocol (`code: 'bad_response'`).
 */
export class FlotillaClient {
  readonly url: string;
  private readonly token: string | undefined;
  private readonly fetchFn: typeof fetch;
  private readonly reconnectDelayMs: number;
  private readonly maxReconnects: number;

  constructor(opts: FlotillaClientOptions) {
    if (!opts.url) throw new Error('FlotillaClient: url is required');
    let parsed: URL;
    try {
      parsed = new URL(opts.url);
    } catch {
      throw new Error(`FlotillaClient: url "${opts.url}" is not a valid URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new Error(`FlotillaClient: url "${opts.url}" must start with http:// or https://`);
    }
    // The URL is printed in errors: a user name or password in it would leak there.
    if (parsed.username || parsed.password) throw new Error('FlotillaClient: url must not hold a user name or password (pass the API token as the token)');
    // RFC 6750 §2.1 b64token; anything else cannot go in an Authorization header, and the
    // runtime's error about it would quote the header, token included.
    if (opts.token !== undefined && !/^[A-Za-z0-9\-._~+/]+=*$/.test(opts.token)) {
      throw new Error('FlotillaClient: token holds characters an HTTP bearer token may not (RFC 6750: letters, digits and -._~+/ then =); check FLOTILLA_TOKEN / --token');
    }
    this.url = opts.url.replace(/\/+$/, '');
    this.token = opts.token;
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.reconnectDelayMs = opts.reconnectDelayMs ?? 250;
    this.maxReconnects = opts.maxReconnects ?? 10;
  }

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

  /** `GET /api/runners` → every registered runner. */
  async listRunners(): Promise<Runner[]> {
    return (await this.request('GET', '/api/runners', RunnerListBody)).runners;
  }

  /**
   * `GET /api/runners?label=&status=&role=` → runners matching every given filter (labels
   * `k=v` all present, one status, `role` label) and the number of queued jobs.
   */
  async listFleet(q: { labels?: Labels; status?: RunnerStatus; role?: string } = {}): Promise<RunnerList> {
    const params = new URLSearchParams();
    if (q.labels && Object.keys(q.labels).length) params.set('label', Object.entries(q.labels).map(([k, v]) => `${k}=${v}`).join(','));
    if (q.status) params.set('status', q.status);
    if (q.role) params.set('role', q.role);
    const qs = params.toString();
    return this.request('GET', `/api/runners${qs ? `?${qs}` : ''}`, RunnerList);
  }

  /** `GET /api/runners/:id` → the runner and its recent jobs (404 `not_found`). */
  async getRunner(id: number): Promise<RunnerDetail> {
    return this.request('GET', `/api/runners/${jobIdPath(id)}`, RunnerDetail);
  }

  /** `GET /api/runners/:id/activity` → the runner's history, newest first (`limit` 1–200, default 50). */
  async getRunnerActivity(id: number, q: { limit?: number } = {}): Promise<RunnerActivity> {
    const qs = q.limit !== undefined ? `?limit=${q.limit}` : '';
    return this.request('GET', `/api/runners/${jobIdPath(id)}/activity${qs}`, RunnerActivity);
  }

  /** `POST /api/runners/:id/hold` (admin) → the runner, `on_hold` until now + `for` (or the old end + `for` with extend). */
  async holdRunner(id: number, req: { for: HoldDuration; reason?: string; extend?: boolean }): Promise<Runner> {
    return this.request('POST', `/api/runners/${jobIdPath(id)}/hold`, Runner, req);
  }

  /**
   * `PATCH /api/runners/:id` (admin) → the runner with the owner's capacity setting applied:
   * `capacity` parallel jobs 1–4, `browserSlots` 1–4 (≤ capacity); null clears the setting.
   * @throws ApiError `invalid_request` (400, naming the field) or `not_found` (404).
   */
  async setRunnerCapacity(id: number, req: { capacity?: number | null; browserSlots?: number | null }): Promise<Runner> {
    return this.request('PATCH', `/api/runners/${jobIdPath(id)}`, Runner, req);
  }

  /** `POST /api/runners/:id/resume` (admin) → the runner with its hold ended. */
  async resumeRunner(id: number): Promise<Runner> {
    return this.request('POST', `/api/runners/${jobIdPath(id)}/resume`, Runner, {});
  }

  /** `POST /api/runners/:id/revoke` (admin) → the revoked runner; its connection and job tokens end. */
  async revokeRunner(id: number): Promise<Runner> {
    return this.request('POST', `/api/runners/${jobIdPath(id)}/revoke`, Runner, {});
  }

  /** `POST /api/jobs/:id/start` (admin) → the job, assigned now (409 `over_capacity`/`on_hold` without force). */
  async startJob(id: number, req: { runnerId?: number; force?: boolean } = {}): Promise<Job> {
    return this.request('POST', `/api/jobs/${jobIdPath(id)}/start`, Job, req);
  }

  /** `GET /api/agents` → every agent the server knows. */
  async listAgents(): Promise<AgentDefinition[]> {
    return (await this.request('GET', '/api/agents', AgentListBody)).agents;
  }

  /**
   * `POST /api/agents/install` (admin) → the new version of every agent in the repository at
   * `source` (git URL or path as the server sees it; `ref` for git). ApiError 422
   * `invalid_agent` (message names the file and the field; nothing installed) or `fetch_failed`;
   * 409 `agent_exists` when an agent would replace a built-in one and `req.replace` is not true.
   */
  async installAgents(req: InstallAgentsRequest): Promise<AgentVersionInfo[]> {
    return (await this.request('POST', '/api/agents/install', InstallAgentsResponse, req)).installed;
  }

  /** `GET /api/agents/versions[?name=]` → every installed agent version (by name, oldest first). */
  async listAgentVersions(name?: string): Promise<AgentVersionInfo[]> {
    const q = name === undefined ? '' : `?name=${encodeURIComponent(name)}`;
    return (await this.request('GET', `/api/agents/versions${q}`, AgentVersionList)).versions;
  }

  /** `POST /api/runner-tokens` (admin) → a single-use runner registration token (`flr_...`). */
  async createRunnerToken(req: { labels?: Labels; expiresInSeconds?: number } = {}): Promise<RunnerTokenResponse> {
    return this.request('POST', '/api/runner-tokens', RunnerTokenResponse, req);
  }

  /**
   * `GET /api/runner-tokens[?all=true]` (admin) → the registration tokens that can still register
   * a runner (with `all`: every one, used, expired and revoked too), oldest first; never a token.
   */
  async listRunnerTokens(opts: { all?: boolean } = {}): Promise<RunnerTokenInfo[]> {
    return (await this.request('GET', `/api/runner-tokens${opts.all ? '?all=true' : ''}`, RunnerTokenList)).tokens;
  }

  /**
   * `POST /api/runner-tokens/:id/revoke` (admin) → the token, `revoked` (or `used` when it was
   * already used: then revoke its runner). Repeating it is fine. ApiError 404 for an unknown id.
   */
  async revokeRunnerToken(id: number): Promise<RunnerTokenInfo> {
    return this.request('POST', `/api/runner-tokens/${idPath(id, 'id')}/revoke`, RunnerTokenInfo);
  }

  /** `POST /api/session`: signs in with a user name and password (the server sets the session cookie). 401 `bad_credentials` when wrong. */
  async signIn(req: SignInRequest): Promise<SessionInfo> {
    return this.request('POST', '/api/session', SessionInfo, req);
  }

  /** `GET /api/session` → who is calling (an API token or a signed-in user) and their role. 401 when neither. */
  async session(): Promise<SessionInfo> {
    return this.request('GET', '/api/session', SessionInfo);
  }

  /** `POST /api/session/logout`: ends the cookie session. */
  async signOut(): Promise<void> {
    await this.request('POST', '/api/session/logout', null, {});
  }

  /** `GET /api/users` (admin) → every user. */
  async listUsers(): Promise<User[]> {
    return (await this.request('GET', '/api/users', UserListBody)).users;
  }

  /** `POST /api/users` (admin) → the new user. 409 `conflict` when the name is taken. */
  async createUser(req: CreateUserRequest): Promise<User> {
    return this.request('POST', '/api/users', User, req);
  }

  // --- tasks and receivers (issue 7) ---------------------------------------------------

  /** `GET /api/tasks` → tasks, newest first (`limit` ≤ 200, `before` a task id cursor). */
  async listTasks(q: { status?: TaskStatus; limit?: number; before?: number } = {}): Promise<Task[]> {
    const p = new URLSearchParams();
    if (q.status) p.set('status', q.status);
    if (q.limit !== undefined) p.set('limit', String(q.limit));
    if (q.before !== undefined) p.set('before', String(q.before));
    const qs = p.toString();
    return (await this.request('GET', `/api/tasks${qs ? `?${qs}` : ''}`, TaskList)).tasks;
  }

  /** `GET /api/tasks/:id` → the task and its 50 newest events. */
  async getTask(id: number): Promise<TaskDetail> {
    return this.request('GET', `/api/tasks/${id}`, TaskDetail);
  }

  /**
   * `GET /api/tasks/:id/conversation` → the task's turns oldest first (what woke each, its job,
   * that job's messages), what waits for the next turn, and `olderBefore` to page back (`limit`
   * 1–50 turns, default 20; `before` a turn cursor).
   */
  async getTaskConversation(id: number, q: { limit?: number; before?: number } = {}): Promise<TaskConversation> {
    const p = new URLSearchParams();
    if (q.limit !== undefined) p.set('limit', String(q.limit));
    if (q.before !== undefined) p.set('before', String(q.before));
    const qs = p.toString();
    return this.request('GET', `/api/tasks/${idPath(id, 'id')}/conversation${qs ? `?${qs}` : ''}`, TaskConversation);
  }

  /** `POST /api/tasks` → the new task (409 `key_taken` when an active task owns a key). With `prompt` it wakes at once. */
  async createTask(req: z.input<typeof CreateTaskRequest>): Promise<Task> {
    return this.request('POST', '/api/tasks', Task, req);
  }

  /** `POST /api/tasks/:id/send` → the task; the prompt is queued for its next turn (now when idle). */
  async sendTaskPrompt(id: number, prompt: string): Promise<Task> {
    return this.request('POST', `/api/tasks/${id}/send`, Task, { prompt });
  }

  /** `POST /api/tasks/:id/suspend` → the task: no wakes until resumed; workspace, session and queue kept. */
  async suspendTask(id: number): Promise<Task> {
    return this.request('POST', `/api/tasks/${id}/suspend`, Task);
  }

  /** `POST /api/tasks/:id/resume` → the task (suspended, workspace_lost: fresh workspace, or completed: reopened). */
  async resumeTask(id: number): Promise<Task> {
    return this.request('POST', `/api/tasks/${id}/resume`, Task);
  }

  /** `POST /api/tasks/:id/stop` → the task; its current turn's job is cancelled. */
  async stopTask(id: number): Promise<Task> {
    return this.request('POST', `/api/tasks/${id}/stop`, Task);
  }

  /** `POST /api/tasks/:id/complete` → the completed task (keys released, its job cancelled). */
  async completeTask(id: number): Promise<Task> {
    return this.request('POST', `/api/tasks/${id}/complete`, Task);
  }

  /** `GET /api/receivers` → every receiver (never a secret). */
  async listReceivers(): Promise<Receiver[]> {
    return (await this.request('GET', '/api/receivers', ReceiverList)).receivers;
  }

  /** `GET /api/receivers/:id` → one receiver. */
  async getReceiver(id: number): Promise<Receiver> {
    return this.request('GET', `/api/receivers/${id}`, Receiver);
  }

  /** `POST /api/receivers` (admin) → the receiver and its secret (shown this once). */
  async createReceiver(req: CreateReceiverRequest): Promise<CreatedReceiver> {
    return this.request('POST', '/api/receivers', CreatedReceiver, req);
  }

  /** `DELETE /api/receivers/:id` (admin). */
  async deleteReceiver(id: number): Promise<void> {
    return this.request('DELETE', `/api/receivers/${id}`, null);
  }

  /** `GET /api/tokens` (admin) → every API token (no secrets). */
  async listApiTokens(): Promise<ApiTokenInfo[]> {
    return (await this.request('GET', '/api/tokens', TokenListBody)).tokens;
  }

  /** `POST /api/tokens` (admin) → the new token, with its `fla_...` secret shown once. */
  async createApiToken(req: CreateApiTokenRequest): Promise<CreatedApiToken> {
    return this.request('POST', '/api/tokens', CreatedApiToken, req);
  }

  /** `GET /api/gateway/routes`: the gateway's model routes in the order tried, price overrides, price table version. */
  async listModelRoutes(): Promise<ModelRoutesView> {
    return this.request('GET', '/api/gateway/routes', ModelRoutesView);
  }

  /** `PUT /api/gateway/routes` (admin): routes model names matching `pattern` (exact or glob; `*` = default) to `provider`. */
  async setModelRoute(pattern: string, provider: ProviderName): Promise<ModelRoute> {
    return this.request('PUT', '/api/gateway/routes', ModelRoute, { pattern, provider });
  }

  /** `DELETE /api/gateway/routes?pattern=` (admin): removes an API route; ApiError 404 when there is none. */
  async deleteModelRoute(pattern: string): Promise<void> {
    await this.request('DELETE', `/api/gateway/routes?pattern=${encodeURIComponent(pattern)}`, null);
  }

  /** `PUT /api/gateway/prices` (admin): overrides the price of `model` (USD per million tokens). */
  async setModelPrice(model: string, price: ModelPrice): Promise<ModelPriceOverride> {
    return this.request('PUT', '/api/gateway/prices', ModelPriceOverride, { model, price });
  }

  /** `DELETE /api/gateway/prices?model=` (admin): removes a price override; ApiError 404 when there is none. */
  async deleteModelPrice(model: string): Promise<void> {
    await this.request('DELETE', `/api/gateway/prices?model=${encodeURIComponent(model)}`, null);
  }

  /** `GET /api/effort-tiers`: the tiers in effect (built-in, configured, account) and the default tier. */
  async listEffortTiers(): Promise<EffortTierList> {
    return this.request('GET', '/api/effort-tiers', EffortTierList);
  }

  /** `PUT /api/effort-tiers/:name` (admin): creates or replaces account tier `name` (model + effort level). ApiError 400 naming the bad field. */
  async setEffortTier(name: string, model: string, level: EffortLevel): Promise<EffortTierView> {
    return this.request('PUT', `/api/effort-tiers/${encodeURIComponent(name)}`, EffortTierView, { model, level });
  }

  /**
   * `PUT /api/effort-default` (admin) → the tiers and the new default: sets the account default
   * tier, or with null falls back to the server's FLOTILLA_DEFAULT_EFFORT. ApiError 404
   * `unknown_tier` when no tier of that name is in effect.
   */
  async setDefaultEffortTier(tier: string | null): Promise<EffortTierList> {
    return this.request('PUT', '/api/effort-default', EffortTierList, { tier });
  }

  /** `DELETE /api/effort-tiers/:name` (admin): removes an account tier; ApiError 404 when the account stored none of that name. */
  async deleteEffortTier(name: string): Promise<void> {
    await this.request('DELETE', `/api/effort-tiers/${encodeURIComponent(name)}`, null);
  }

  /** `DELETE /api/tokens/:id` (admin): revokes an API token. */
  async revokeApiToken(id: number): Promise<void> {
    await this.request('DELETE', `/api/tokens/${idPath(id, 'id')}`, null);
  }

  /**
   * Follows a job's events over SSE (`GET /api/jobs/:id/events`), in seq order, each once,
   * reconnecting with `Last-Event-ID` ({@link followJobEvents}).
   */
  followEvents(jobId: number, opts: FollowOptions = {}): AsyncGenerator<JobEvent> {
    return followJobEvents({ url: this.url, fetchFn: this.fetchFn, headers: () => this.authHeaders(), reconnectDelayMs: this.reconnectDelayMs, maxReconnects: this.maxReconnects }, jobId, opts);
  }

  /** Bearer token when given; always the CSRF header (a signed-in browser needs it to change anything; harmless otherwise). */
  private authHeaders(): Record<string, string> {
    return { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), 'x-flotilla-csrf': '1' };
  }

  private async request<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, schema: z.ZodType<T>, body?: unknown): Promise<T>;
  private async request(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, schema: null, body?: unknown): Promise<void>;
  private async request<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, schema: z.ZodType<T> | null, body?: unknown): Promise<T | void> {
    const what = `${method} ${path}`;
    const headers: Record<string, string> = { ...this.authHeaders(), accept: 'application/json' };
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await this.fetchFn(this.url + path, init);
    } catch (err) {
      throw new ApiError(0, 'network', `cannot reach the Flotilla server at ${this.url}: ${causeOf(err)}`);
    }
    if (!res.ok) throw await apiErrorFromResponse(res, what);
    if (schema === null) {
      await res.body?.cancel().catch(() => undefined);
      return;
    }
    let json: unknown;
    try {
      json = await res.json();
    } catch {
      throw new ApiError(res.status, 'bad_response', `${what}: the reply is not JSON`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new ApiError(res.status, 'bad_response', `${what}: unexpected reply: ${describeIssues(parsed.error.issues)}`);
    return parsed.data;
  }
}
