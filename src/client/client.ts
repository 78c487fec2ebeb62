import { z } from 'zod';
import {
  AgentDefinition,
  AgentVersionList,
  InstallAgentsResponse,
  type AgentVersionInfo,
  type InstallAgentsRequest,
  ModelPriceOverride,
  ModelRoute,
  ModelRoutesView,
  EffortTierList,
  EffortTierView,
  type EffortLevel,
  type ModelPriceRequest,
  type ProviderName,
  SessionInfo,
  User,
  ApiTokenInfo,
  CreatedApiToken,
  type SignInRequest,
  type CreateUserRequest,
  type CreateApiTokenRequest,
  Task,
  TaskList,
  TaskDetail,
  TaskBudgetResult,
  CreateTaskRequest,
  Receiver,
  ReceiverList,
  CreatedReceiver,
  type CreateReceiverRequest,
  type TaskStatus,
  TaskConversation,
} from '../protocol/index.js';
import { FleetApi } from './fleet-api.js';
import { idPath } from './util.js';

export type { FollowOptions } from './follow-events.js';
export type { FlotillaClientOptions } from './transport.js';
export type { CreateJobInput, ListJobsQuery } from './jobs-api.js';
export { RunnerTokenResponse } from './fleet-api.js';

const AgentListBody = z.object({ agents: z.array(AgentDefinition) });
const UserListBody = z.object({ users: z.array(User) });
const TokenListBody = z.object({ tokens: z.array(ApiTokenInfo) });

/**
 * Typed SDK over the Flotilla REST/SSE API. Every response is validated with the protocol
 * schemas. Every method throws {@link ApiError} on an error reply (with the server's code,
 * message and field), on an unreachable server (`code: 'network'`, status 0) and on a reply
 * that does not match the protocol (`code: 'bad_response'`). Built in parts, one area a file:
 * transport.ts (options, request), jobs-api.ts (jobs, events, budgets, costs), fleet-api.ts
 * (runners, holds, registration tokens), and here agents, users and tokens, tasks and
 * receivers, model routes and prices, effort tiers.
 */
export class FlotillaClient extends FleetApi {
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

  /**
   * `POST /api/tasks/:id/budget` → the task, with `resumed`: the jobs the top-up resumed.
   * `{ addUsd }` adds to its budget (its running turn's tree too; a turn paused for budget
   * resumes); `{ budgetUsd }` sets it, between turns only.
   * Errors: 409 `no_budget` (add to a task without one), 409 `invalid_state` (set while a turn
   * runs), 400 naming `addUsd` past the $100,000 cap.
   */
  async setTaskBudget(id: number, req: { addUsd: number } | { budgetUsd: number }): Promise<TaskBudgetResult> {
    return this.request('POST', `/api/tasks/${id}/budget`, TaskBudgetResult, req);
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

  /**
   * `PUT /api/gateway/prices` (admin): overrides the price of `model` (USD per million tokens).
   * Cache rates left out are set by the server from the input rate and the ratios of the price
   * table entry the override replaces (protocol setModelPriceRequestFor: gpt-4o's cache reads
   * at input × 0.5; × 1.25, × 2, × 0.1 for a model the table does not list).
   */
  async setModelPrice(model: string, price: z.input<typeof ModelPriceRequest>): Promise<ModelPriceOverride> {
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
}
