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

/** The keys of a comma-separated setting (ANTHROPIC_API_KEY=a,b), trimmed, empty ones dropped. */
export function splitKeys(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
}

/** Round-robin over the provider's keys, shared by every call of one gateway. */
export class KeyRing {
  private next = 0;
  private readonly keys: readonly string[];
  /**
   * `keys`: the provider's keys. An entry holding a comma-separated list (a setting passed on
   * unsplit) is split, so an upstream call never gets more than one key.
   */
  constructor(keys: readonly string[]) {
    this.keys = keys.flatMap(splitKeys);
  }
  /** How many keys rotate (0: the provider has none). */
  get size(): number {
    return this.keys.length;
  }
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
  return retryAfterOf((n) => h.get(n), now);
}

/** {@link retryAfterMs} over any header lookup (`get(name)` → value or null/undefined). */
export function retryAfterOf(get: (name: string) => string | null | undefined, now = Date.now()): number | null {
  const raw = get('retry-after-ms');
  const ms = Number(raw);
  if (raw && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = get('retry-after');
  if (!ra) return null;
  const s = Number(ra);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const t = Date.parse(ra);
  return Number.isFinite(t) ? Math.max(0, t - now) : null;
}

/** How {@link withRetries} reads and changes a reply of type R (default: web Response). */
export interface ReplyOps<R> {
  status(r: R): number;
  header(r: R, name: string): string | null | undefined;
  /** Drops a reply that will be retried (closes its body). */
  discard(r: R): Promise<void>;
  /** A copy of r with header `name` set. */
  withHeader(r: R, name: string, value: string): R;
}

const RESPONSE_OPS: ReplyOps<Response> = {
  status: (r) => r.status,
  header: (r, n) => r.headers.get(n),
  discard: async (r) => void (await r.body?.cancel().catch(() => undefined)),
  withHeader: (r, n, v) => {
    const headers = new Headers(r.headers);
    headers.set(n, v);
    return new Response(r.body, { status: r.status, statusText: r.statusText, headers });
  },
};

/**
 * Calls `attempt(key)` until it gives a non-retryable reply or the retries are used up.
 * Replies are web Responses unless `opts.ops` says how to read another type.
 * @returns the last reply (with `x-should-retry: false` added when retries ran out on a
 *   retryable status) and how many upstream calls were made.
 * @throws the last connection error when every attempt failed to connect; at once, an error
 *   with `noRetry: true` (e.g. a 2xx reply over the size limit, upstream-http.ts), or any error
 *   once `opts.signal` is aborted.
 */
export async function withRetries<R = Response>(
  attempt: (key: string) => Promise<R>,
  keys: KeyRing,
  policy: RetryPolicy = DEFAULT_RETRY,
  opts: { signal?: { readonly aborted: boolean }; retryable?: (res: R) => boolean; sleep?: (ms: number) => Promise<void>; ops?: ReplyOps<R> } = {},
): Promise<{ response: R; calls: number }> {
  const ops = opts.ops ?? (RESPONSE_OPS as unknown as ReplyOps<R>);
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let calls = 0;
  for (let i = 0; ; i++) {
    let res: R | null = null;
    let error: unknown = null;
    calls += 1;
    try {
      res = await attempt(keys.take());
    } catch (err) {
      // An error marked `noRetry` (upstream-http.ts ReplyTooLargeError of a 2xx: the provider
      // did the work and billed it; another call would bill it again) ends the retries at once.
      if (opts.signal?.aborted || (err as { noRetry?: unknown } | null)?.noRetry === true) throw err;
      error = err;
    }
    // The common case (a success, or an error no one retries): no backoff or retry-after to work out.
    if (res !== null && !RETRYABLE.has(ops.status(res))) return { response: res, calls };
    const retryable = res !== null ? RETRYABLE.has(ops.status(res)) && ops.header(res, 'x-should-retry') !== 'false' && (opts.retryable?.(res) ?? true) : true;
    let wait = policy.baseMs * 2 ** i * (0.5 + Math.random());
    const got = res;
    const asked = got !== null ? retryAfterOf((n) => ops.header(got, n)) : null;
    if (asked !== null) wait = asked;
    if (!retryable || i >= policy.retries || wait > policy.maxDelayMs || opts.signal?.aborted) {
      if (res === null) throw error;
      // We retried as much as allowed: the harness must not retry on top.
      if (retryable) return { response: ops.withHeader(res, 'x-should-retry', 'false'), calls };
      return { response: res, calls };
    }
    if (res !== null) await ops.discard(res);
    await sleep(Math.min(wait, policy.maxDelayMs));
  }
}
