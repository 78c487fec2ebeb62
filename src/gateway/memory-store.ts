import { hashToken } from '../core/tokens.js';
import type { BudgetReservationResult, JobRow, ModelPriceRow, ModelRouteRow, NewModelCall, PendingCall, TreeBudget } from '../store/types.js';
import type { GatewayStore } from './gateway.js';

/**
 * A tiny in-memory {@link GatewayStore} for tests and experiments: jobs are registered with
 * their plain token (kept only as its hash), model calls are kept in `calls` in order.
 */
export class MemoryGatewayStore implements GatewayStore {
  readonly calls: NewModelCall[] = [];
  private readonly byHash = new Map<string, JobRow>();

  /** Makes `token` a live token of a running job with the given fields (id 1, agent test-fixer by default). */
  addJob(token: string, fields: Partial<JobRow> = {}): JobRow {
    const id = fields.id ?? 1;
    const job: JobRow = {
      id,
      parentId: null,
      rootId: id,
      agent: 'test-fixer',
      agentVersion: '1',
      input: {},
      status: 'running',
      endReason: null,
      error: null,
      priority: 0,
      selector: {},
      runnerId: 1,
      attempt: 1,
      budgetMicros: 1_000_000,
      sessionId: null,
      resumeSessionId: null,
      result: null,
      createdAt: 0,
      assignedAt: 0,
      startedAt: 0,
      finishedAt: null,
      ...fields,
    };
    this.byHash.set(hashToken(token), job);
    return job;
  }

  /** Kills a token (as when its job ends). */
  removeToken(token: string): void {
    this.byHash.delete(hashToken(token));
  }

  /** Pauses the token's job for budget, as the control plane does after a refusal (the token then only finds it as paused). */
  pauseForBudget(token: string, reason = 'tree out of budget'): void {
    const job = this.byHash.get(hashToken(token));
    if (job) Object.assign(job, { status: 'paused', endReason: 'budget', error: reason });
  }

  /** The live (assigned or running) job of the token, as the store's. */
  async findJobByTokenHash(tokenHash: string): Promise<JobRow | null> {
    const job = this.byHash.get(tokenHash);
    return job && (job.status === 'running' || job.status === 'assigned') ? job : null;
  }

  async findPausedJobByTokenHash(tokenHash: string): Promise<JobRow | null> {
    const job = this.byHash.get(tokenHash);
    return job && job.status === 'paused' && job.endReason === 'budget' ? job : null;
  }

  async recordModelCall(c: NewModelCall): Promise<void> {
    this.calls.push(c);
  }

  /** Budgets per root id; a tree's row is made from its root job's budgetMicros (or 1 USD) on first use. */
  readonly budgets = new Map<number, { limit: number; spent: number; reserved: number }>();

  private budgetOf(rootId: number) {
    let b = this.budgets.get(rootId);
    if (!b) {
      const root = [...this.byHash.values()].find((j) => j.id === rootId);
      b = { limit: root?.budgetMicros ?? 1_000_000, spent: 0, reserved: 0 };
      this.budgets.set(rootId, b);
    }
    return b;
  }

  private view(rootId: number): TreeBudget {
    const b = this.budgetOf(rootId);
    return { rootId, limitMicros: b.limit, spentMicros: b.spent, reservedMicros: b.reserved, remainingMicros: Math.max(0, b.limit - b.spent - b.reserved) };
  }

  /** The tree's budget figures (as the store's getTreeBudget; made on first use as in reserveBudget). */
  async getTreeBudget(rootId: number, _now = 0): Promise<TreeBudget | null> {
    return this.view(rootId);
  }

  /** Reservations in flight by id (the store's budget_reservations rows). */
  readonly reservations = new Map<number, { rootId: number; micros: number; expiresAt: number }>();
  private nextReservation = 1;

  /** As the store's (`_jobId`, `_call`: sub-limits and the sweep's ledger row are not kept here). */
  async reserveBudget(rootId: number, worstMicros: number, now = 0, ttlMs = 30 * 60_000, _jobId?: number, _call?: PendingCall): Promise<BudgetReservationResult> {
    const b = this.budgetOf(rootId);
    if (b.spent + b.reserved + worstMicros > b.limit) return { ok: false, budget: this.view(rootId) };
    b.reserved += worstMicros;
    const id = this.nextReservation++;
    this.reservations.set(id, { rootId, micros: worstMicros, expiresAt: now + ttlMs });
    return { ok: true, budget: this.view(rootId), reservationId: id };
  }

  async extendBudgetReservation(reservationId: number, expiresAt: number): Promise<boolean> {
    const r = this.reservations.get(reservationId);
    if (r) r.expiresAt = expiresAt;
    return r !== undefined;
  }

  async settleBudget(rootId: number, reservationId: number, costMicros: number, _now = 0, call?: NewModelCall): Promise<boolean> {
    const b = this.budgetOf(rootId);
    const held = this.reservations.get(reservationId);
    this.reservations.delete(reservationId);
    b.reserved = Math.max(0, b.reserved - (held?.micros ?? 0));
    b.spent += costMicros;
    if (call) this.calls.push(call);
    return held !== undefined;
  }

  /** Model routes set "through the API" (pattern → provider), for tests. */
  readonly routes = new Map<string, string>();
  /** Price overrides by model, for tests. */
  readonly prices = new Map<string, ModelPriceRow['price']>();

  async listModelRoutes(): Promise<ModelRouteRow[]> {
    return [...this.routes].sort(([a], [b]) => a.localeCompare(b)).map(([pattern, provider]) => ({ pattern, provider, updatedAt: 0 }));
  }

  async listModelPrices(): Promise<ModelPriceRow[]> {
    return [...this.prices].sort(([a], [b]) => a.localeCompare(b)).map(([model, price]) => ({ model, price, updatedAt: 0 }));
  }
}
