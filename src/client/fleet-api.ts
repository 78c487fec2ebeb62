import { z } from 'zod';
import { Runner, RunnerActivity, RunnerDetail, RunnerList, RunnerTokenInfo, RunnerTokenList, UpdateRunnerResponse, type HoldDuration, type Labels, type RunnerStatus } from '../protocol/index.js';
import { JobsApi } from './jobs-api.js';
import { idPath, jobIdPath } from './util.js';

/**
 * `POST /api/runner-tokens` response: a single-use registration token and its expiry (ISO-8601
 * or epoch ms); `id` (servers since migration 0019) names it for `listRunnerTokens`/`revokeRunnerToken`;
 * `labels`, the binding labels the runner gets (absent from older servers).
 */
export const RunnerTokenResponse = z.object({ id: z.number().int().positive().optional(), token: z.string().min(1), expiresAt: z.union([z.string(), z.number()]), labels: z.record(z.string(), z.string()).optional() });
export type RunnerTokenResponse = z.infer<typeof RunnerTokenResponse>;

const RunnerListBody = z.object({ runners: z.array(Runner) });

/** The client SDK's fleet calls: runners, holds, capacity and registration tokens (part of {@link FlotillaClient}, client.ts). */
export abstract class FleetApi extends JobsApi {
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

  /**
   * `POST /api/runners/:id/update` (admin) → the runner, `updating`: it drains its jobs, runs its
   * update command for `version` (absent: the server's own) and re-executes itself.
   * @throws ApiError `invalid_request` (400, field `version`), `not_found` (404), or 409
   *   `revoked` / `offline` / `cannot_update` (the runner inside `flotilla up`) / `not_connected`.
   */
  async updateRunner(id: number, req: { version?: string } = {}): Promise<UpdateRunnerResponse> {
    return this.request('POST', `/api/runners/${jobIdPath(id)}/update`, UpdateRunnerResponse, req);
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
}
