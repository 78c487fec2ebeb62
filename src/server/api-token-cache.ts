import type { ApiTokenRow, Store } from '../store/types.js';

/**
 * How long a found API token is trusted without asking the store again, ms. A token revoked
 * through another replica stops working here within this time (as installed agents, model
 * routes and effort settings reach other replicas within 2 s); one revoked through this process
 * stops at once ({@link ApiTokenCache.invalidate}).
 */
export const API_TOKEN_TTL_MS = 1000;

/** Most tokens kept (the oldest found is dropped first): a fleet has a handful of API tokens. */
const MAX_ENTRIES = 1000;

/**
 * API tokens found by hash for `requireApiToken` (auth.ts), read from the store at most once per
 * {@link API_TOKEN_TTL_MS} per token: every API call used to spend a store round trip on its
 * token before its own work (issue 5: one of the four round trips between `POST /api/jobs` and
 * the runner's `job.assign` on PostgreSQL). Only tokens that exist are kept: an unknown token
 * (a typo, a guess, one created through another replica a moment ago) always asks the store.
 * A read that began before an {@link invalidate} is not kept.
 */
export class ApiTokenCache {
  private readonly found = new Map<string, { row: ApiTokenRow; at: number }>();
  private generation = 0;

  constructor(
    private readonly store: Pick<Store, 'findApiTokenByHash'>,
    private readonly clock: () => number = Date.now,
    private readonly ttlMs = API_TOKEN_TTL_MS,
  ) {}

  /**
   * The token with SHA-256 hash `tokenHash` (hex), or null when the store has none.
   * @throws Error from the store's read.
   */
  async find(tokenHash: string): Promise<ApiTokenRow | null> {
    const hit = this.found.get(tokenHash);
    if (hit && this.clock() - hit.at < this.ttlMs) return hit.row;
    const generation = this.generation;
    // The age counts from when the read began: conservative for the TTL.
    const at = this.clock();
    const row = await this.store.findApiTokenByHash(tokenHash);
    if (generation !== this.generation) return row;
    this.found.delete(tokenHash);
    if (row) {
      if (this.found.size >= MAX_ENTRIES) this.found.delete(this.found.keys().next().value!);
      this.found.set(tokenHash, { row, at });
    }
    return row;
  }

  /** Forget every token (after this process revoked one): the next call of each asks the store. */
  invalidate(): void {
    this.generation++;
    this.found.clear();
  }
}
