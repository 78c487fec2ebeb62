/**
 * Throttling of failed sign-ins, in process.
 *
 * Each key (`user:<name>`, `addr:<client address>`) counts its
 * failures until {@link ThrottlePolicy.windowMs} pass without one (then it starts afresh). From the
 * `maxFailures`-th failure on the key is locked for `baseLockMs × 2^(failures − maxFailures)`,
 * capped at `maxLockMs` (exponential backoff); while locked every attempt gets 429 with
 * `Retry-After` before any password is checked, so a locked key costs no scrypt either.
 * A successful sign-in clears its user key (not its address key: an attacker with one account of
 * their own must not be able to reset the count of the address they guess from).
 *
 * The key of a user is the name as submitted, whether such a user exists or not, so the reply
 * (401, then 429) never tells a known name from an unknown one.
 *
 * State is per process: each server replica counts its own failures (behind a load balancer an
 * attacker gets at most replicas × the limit). Memory is bounded: at most `maxKeys` keys, the
 * oldest dropped first; expired entries go on every write.
 */

/** Limits of one kind of key. Times in ms. */
export interface ThrottlePolicy {
  /** Failures allowed within `windowMs` before the key is locked. */
  maxFailures: number;
  /** How long failures are remembered, counted from the last one. */
  windowMs: number;
  /** First lock length; doubles with every further failure. */
  baseLockMs: number;
  /** Longest lock. */
  maxLockMs: number;
}

/** Per user name: 5 failures with less than 15 minutes between them, then locks of 30 s, 60 s, ... up to 15 minutes. */
export const USER_POLICY: ThrottlePolicy = { maxFailures: 5, windowMs: 15 * 60_000, baseLockMs: 30_000, maxLockMs: 15 * 60_000 };
/** Per client address: 20 failures likewise (several people may share one address behind NAT). */
export const ADDRESS_POLICY: ThrottlePolicy = { maxFailures: 20, windowMs: 15 * 60_000, baseLockMs: 30_000, maxLockMs: 15 * 60_000 };

interface Entry {
  failures: number;
  /** Epoch ms of the last failure. */
  lastAt: number;
  /** Epoch ms until which the key is locked (0: not locked). */
  lockedUntil: number;
  policy: ThrottlePolicy;
}

/** Failure counters by key; see the file comment. */
export class SignInThrottle {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxKeys = 50_000) {}

  /**
   * Milliseconds until the first of `keys` that is locked at `now` unlocks (the largest wait),
   * or 0 when none is locked.
   */
  retryAfterMs(keys: string[], now: number): number {
    let wait = 0;
    for (const k of keys) {
      const e = this.entries.get(k);
      if (e && e.lockedUntil > now) wait = Math.max(wait, e.lockedUntil - now);
    }
    return wait;
  }

  /** Records one failure for each key under its policy, at epoch ms `now`. */
  fail(keys: Array<[string, ThrottlePolicy]>, now: number): void {
    for (const [k, policy] of keys) {
      let e = this.entries.get(k);
      if (!e || now - e.lastAt > policy.windowMs) e = { failures: 0, lastAt: now, lockedUntil: e?.lockedUntil ?? 0, policy };
      e.failures += 1;
      e.lastAt = now;
      if (e.failures >= policy.maxFailures) {
        const lock = Math.min(policy.maxLockMs, policy.baseLockMs * 2 ** Math.min(30, e.failures - policy.maxFailures));
        e.lockedUntil = now + lock;
      }
      // Re-insert so Map order is the order of last failure (oldest first for eviction).
      this.entries.delete(k);
      this.entries.set(k, e);
    }
    this.prune(now);
  }

  /** Forgets the failures of `key` (a successful sign-in of that user). */
  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Number of keys remembered (tests). */
  get size(): number {
    return this.entries.size;
  }

  private prune(now: number): void {
    for (const [k, e] of this.entries) {
      if (this.entries.size <= this.maxKeys && !(now - e.lastAt > e.policy.windowMs && e.lockedUntil <= now)) break;
      this.entries.delete(k);
    }
  }
}

/** Throttle key of a user name as submitted (case-folded, so `Ada` and `ada` share a count). */
export function userKey(name: string): string {
  return `user:${name.trim().toLowerCase()}`;
}

/** `Retry-After` value (whole seconds, at least 1) for a wait of `ms`. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
