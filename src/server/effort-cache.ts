import type { Store } from '../store/types.js';
import { mergeStoredEffort, readStoredEffort, type StoredAccountEffort, type StoredEffortRows } from './effort-stored.js';

/**
 * How long the effort settings read from the store are reused, ms: a change made through
 * another replica applies here within this time (as installed agents and model routes do,
 * server.ts / gateway/model-directory.ts); one made through this process applies at once.
 */
export const EFFORT_TTL_MS = 2000;

/**
 * The account's effort settings for the hot paths (`POST /api/jobs` checks the run's tier;
 * every dispatch pass resolves its jobs' tiers): the store's tiers and default tier
 * (effort-stored.ts, two reads) are read at most once per {@link EFFORT_TTL_MS}, one read in
 * flight at a time, and merged with the environment's on each call. The effort routes call
 * {@link invalidate} after each change, and a read that began before it is not used after it
 * (neither cached nor handed to a later caller), so this server never hands out settings older
 * than its own last change. A failed read is not cached: the next call reads again.
 */
export class EffortSettings {
  private cached: { rows: StoredEffortRows; at: number } | null = null;
  private loading: { generation: number; rows: Promise<StoredEffortRows> } | null = null;
  private generation = 0;

  constructor(
    private readonly store: Pick<Store, 'listEffortTiers' | 'getSetting'>,
    private readonly ttlMs = EFFORT_TTL_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * The settings in effect (stored over `env`'s), at most {@link EFFORT_TTL_MS} old.
   * @throws Error from the store's read, or naming FLOTILLA_EFFORT_TIERS when it is malformed.
   */
  async get(env: NodeJS.ProcessEnv = process.env): Promise<StoredAccountEffort> {
    return mergeStoredEffort(await this.rows(), env);
  }

  /** Forget the stored settings (after this process changed them): the next call reads the store. */
  invalidate(): void {
    this.generation++;
    this.cached = null;
  }

  private rows(): Promise<StoredEffortRows> {
    const c = this.cached;
    if (c && this.clock() - c.at < this.ttlMs) return Promise.resolve(c.rows);
    if (this.loading?.generation === this.generation) return this.loading.rows;
    const generation = this.generation;
    // The age counts from when the read began: conservative for the TTL.
    const startedAt = this.clock();
    const rows = readStoredEffort(this.store).then((r) => {
      if (generation === this.generation) this.cached = { rows: r, at: startedAt };
      return r;
    });
    const loading = { generation, rows };
    this.loading = loading;
    const done = () => {
      if (this.loading === loading) this.loading = null;
    };
    rows.then(done, done);
    return rows;
  }
}
