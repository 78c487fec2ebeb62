/**
 * Upstream retries (issue 3, "upstream failures"): only where the provider allows it, with a
 * FIXED total — `retries` N means at most N+1 upstream calls for one client call, and when the
 * gateway gives up the reply carries `x-should-retry: false` so the harness does not retry it
 * again (no second retry layer multiplying the count).
 *
 * Retried: 408, 409, 429, 500, 502, 503, 504, 529 and connection errors before any reply —
 * unless the upstream said `x-should-retry: false` (or, OpenAI, `insufficient_quota`: checked by
 * the caller's `retryable`). Delay: `retry-after` (seconds or an HTTP date; `retry-after-ms`
 * too) when given, capped at `maxDelayMs`; else `baseMs × 2^attempt` with ±50 % jitter.
 * Keys: each attempt takes the next key round-robin; a 529 or 429 does not take a key out
 * of service (the next call may use it again).
 */
export interface RetryPolicy {
  /** Retries after the first call (default 2 → at most 3 upstream calls). */
  retries: number;
  /** Backoff base, ms (default 250). */
  baseMs: number;
  /** Longest wait between attempts, ms (default 10,000); a longer retry-after ends the retries. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 2, baseMs: 250, maxDelayMs: 10_000 };

const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504, 529]);

/** Round-robin over the provider's keys, shared by every call of one gateway. */
export class KeyRing {
  private next = 0;
  constructor(private readonly keys: readonly string[]) {}
  /** The next key ('' when there are none). */
  take(): string {
    if (this.keys.length === 0) return '';
    const k = this.keys[this.next % this.keys.length]!;
    this.next = (this.next + 1) % this.keys.length;
    return k;
  }
}

/** Wait in ms the reply asks for (`retry-after-ms`, `retry-after` seconds or HTTP date), or null. */
export function retryAfterMs(h: Headers, now = Date.now()): number | null {
  const ms = Number(h.get('retry-after-ms'));
  if (h.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = h.get('retry-after');
  if (!ra) return null;
  const s = Number(ra);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const t = Date.parse(ra);
  return Number.isFinite(t) ? Math.max(0, t - now) : null;
}

/**
 * Calls `attempt(key)` until it gives a non-retryable reply or the retries are used up.
 * @returns the last response (with `x-should-retry: false` added when retries ran out on a
 *   retryable status) and how many upstream calls were made.
 * @throws the last connection error when every attempt failed to connect.
 */
export async function withRetries(
  attempt: (key: string) => Promise<Response>,
  keys: KeyRing,
  policy: RetryPolicy = DEFAULT_RETRY,
  opts: { signal?: AbortSignal; retryable?: (res: Response) => boolean; sleep?: (ms: number) => Promise<void> } = {},
): Promise<{ response: Response; calls: number }> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let calls = 0;
  for (let i = 0; ; i++) {
    let res: Response | null = null;
    let error: unknown = null;
    calls += 1;
    try {
      res = await attempt(keys.take());
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      error = err;
    }
    const retryable = res ? RETRYABLE.has(res.status) && res.headers.get('x-should-retry') !== 'false' && (opts.retryable?.(res) ?? true) : true;
    let wait = policy.baseMs * 2 ** i * (0.5 + Math.random());
    const asked = res ? retryAfterMs(res.headers) : null;
    if (asked !== null) wait = asked;
    if (!retryable || i >= policy.retries || wait > policy.maxDelayMs || opts.signal?.aborted) {
      if (!res) throw error;
      if (retryable) {
        // We retried as much as allowed: the harness must not retry on top.
        const headers = new Headers(res.headers);
        headers.set('x-should-retry', 'false');
        return { response: new Response(res.body, { status: res.status, statusText: res.statusText, headers }), calls };
      }
      return { response: res, calls };
    }
    await res?.body?.cancel().catch(() => undefined);
    await sleep(Math.min(wait, policy.maxDelayMs));
  }
}
